#!/usr/bin/env bash
# Installs iclab's Debian packages (only the missing ones) and builds a Release build in build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
#   scripts/setup.sh            set up + build
#   BUILD_DIR=build-asan CMAKE_ARGS="-DICLAB_SANITIZE=ON -DICLAB_NATIVE=OFF" scripts/setup.sh   sanitizer build
#   TARGETS=iclab scripts/setup.sh   only the command-line tool (scripts/run.sh, scripts/reproduce.sh: not the tests)
# Takes no arguments (exit 2 with a usage line otherwise); JOBS (default: the cores) is an integer >= 1. Exit 1 when
# a package cannot be installed or the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/args.sh
usage='usage: [BUILD_DIR=DIR] [CMAKE_ARGS="..."] [JOBS=N] [TARGETS="t1 t2"] scripts/setup.sh'
no_arguments "$@"
integer_in JOBS "${JOBS:-1}" 1 4096
targets=()
for target in ${TARGETS:-}; do
  [[ "$target" =~ ^[A-Za-z0-9_.+-]+$ ]] || usage_error "TARGETS: bad target name '$target'"
  targets+=(--target "$target")
done

. scripts/lib/apt_ensure.sh
apt_ensure setup g++ cmake make ninja-build pkg-config git \
  libxtensor-dev libxtensor-blas-dev libxsimd-dev xtl-dev libopenblas-dev \
  libhdf5-dev libyaml-cpp-dev libboost-program-options-dev catch2 python3 \
  pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pandas python3-h5py python3-yaml
# (the last line: the Python module `import iclab`, docs/python.md; export PYTHONPATH=$PWD/build/python)

build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
. scripts/lib/cmake_configure.sh
# shellcheck disable=SC2086
cmake_configure "$build_dir" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs" "${targets[@]}" >&2
echo "setup: built $build_dir/iclab (Python: export PYTHONPATH=$PWD/$build_dir/python; docs/python.md)" >&2
