#!/usr/bin/env bash
# Installs iclab's Debian packages (only the missing ones) and builds a Release build in build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
#   scripts/setup.sh            set up + build
#   BUILD_DIR=build-asan CMAKE_ARGS="-DICLAB_SANITIZE=ON -DICLAB_NATIVE=OFF" scripts/setup.sh   sanitizer build
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make pkg-config git
          libxtensor-dev libxtensor-blas-dev libxsimd-dev xtl-dev libopenblas-dev
          libhdf5-dev libyaml-cpp-dev libboost-program-options-dev catch2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j "$jobs" >&2
echo "setup: built $build_dir/iclab" >&2
