#!/usr/bin/env bash
# Sourced by the build scripts: cmake_configure DIR [cmake args...] configures DIR from this tree. A new build
# directory gets the Ninja generator when ninja is installed (scripts/setup.sh installs ninja-build): Ninja compiles
# the experiments' files while the framework's last ones compile, where Make finishes each library first; a fresh
# `iclab` target took 188 s against 233 s on 2 cores (docs/performance.md, "Build and start time"). A directory
# already configured keeps its generator (CMake refuses to switch one), so an existing Make build goes on working.
cmake_configure() {
  local dir="$1"; shift
  local generator=()
  if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
