#!/usr/bin/env bash
# README command 2: set up, build, and run every test through ctest.
#   scripts/test.sh             Release build in build/, every test (ctest -j JOBS, each test on cores / JOBS threads)
#   scripts/test.sh --x86-64-v3 the same, then iclab built again for -march=x86-64-v3 in build-v3/ (iclab only) and its
#                               fingerprints checked, run as an AVX2 CPU would run it (OpenBLAS's Haswell kernels,
#                               glibc's AVX-512 variants off): the same bits as native (issue 46; ~5 min more on 2 cores)
#   scripts/test.sh --x86-64-v3-only   that check alone, after a run of scripts/test.sh (.ci/run runs the two)
#   scripts/test.sh --native-only      the default (kept for scripts that name it)
#   scripts/test.sh --sanitize  ASan + UBSan build in build-asan/ (slower)
#   scripts/test.sh --slurm     start a single-node Slurm cluster here (scripts/slurm/local_cluster.sh), then run
#                               every test, the Slurm sweep test (label slurm) included
# JOBS (default: the cores) is the number of tests run at once; OMP_NUM_THREADS (default: cores / JOBS, at least 1) the
# threads of each (more would oversubscribe the cores: tests that compare thread counts set their own). Exit status:
# ctest's (0 all passed, 8 a test failed), 1 when only the x86-64-v3 fingerprints differ, 2 for an unknown argument
# (with a usage line), 1 when the setup fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/args.sh
usage="usage: scripts/test.sh [--sanitize | --slurm | --native-only | --x86-64-v3 | --x86-64-v3-only]"
mode="--native-only"
case $# in
  0) ;;
  1) case "$1" in
       --sanitize|--slurm|--native-only|--x86-64-v3|--x86-64-v3-only) mode=$1 ;;
       -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
       *) usage_error "unknown argument '$1'" ;;
     esac ;;
  *) usage_error "at most one of --sanitize, --slurm, --native-only, --x86-64-v3, --x86-64-v3-only" ;;
esac
integer_in JOBS "${JOBS:-1}" 1 4096
ctest_args=()
if [ "$mode" = "--slurm" ]; then
  scripts/slurm/local_cluster.sh
fi
if [ "$mode" = "--sanitize" ]; then
  export BUILD_DIR=build-asan CMAKE_ARGS="-DICLAB_SANITIZE=ON -DICLAB_NATIVE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo"
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # the 1-minute training run takes ~10x longer under ASan; the fingerprints are those of the Release build (-O3),
  # which an -O2 build without -march need not give (fingerprints_detect, the check's own test, runs)
  ctest_args=(-E "learns the induction head|^fingerprints$")
fi
scripts/setup.sh
# Test-only packages: the Python reader of runs (scripts/python/iclab_runs.py) is tested against iclab collect,
# the report (scripts/report/make_report.py) is made from real runs, and GPT-2 import/export is checked against a
# PyTorch forward (tests/gpt2/test_gpt2_checkpoint.py); the report's screenshot test runs headless Chromium (otherwise skipped);
# the Python module's tests run under pytest and the quickstart notebook (docs/notebooks/quickstart.ipynb) is executed by
# nbclient with an IPython kernel (docs/python.md).
. scripts/lib/apt_ensure.sh
apt_ensure "test setup" python3-h5py python3-pandas python3-yaml python3-matplotlib python3-torch chromium \
  python3-nbclient python3-nbformat python3-ipykernel python3-pytest
status=0
jobs=${JOBS:-$(nproc)}
threads=$(( $(nproc) / jobs )); [ "$threads" -ge 1 ] || threads=1
if [ "$mode" != "--x86-64-v3-only" ]; then
  (cd "${BUILD_DIR:-build}" && OMP_NUM_THREADS="${OMP_NUM_THREADS:-$threads}" ctest --output-on-failure -j "$jobs" \
    "${ctest_args[@]}") || status=$?
fi
if [ "$mode" = "--x86-64-v3" ] || [ "$mode" = "--x86-64-v3-only" ]; then
  # Issue 46: every x86-64 CPU with AVX2 and FMA gives the same bits. The native build's ctest fingerprints compared
  # them with tests/data/fingerprints.txt; the same check on an x86-64-v3 build compares the two (its --reference:
  # the native build's outputs, for the first differing element). It runs as on an AVX2 CPU: OpenBLAS's Haswell
  # kernels and glibc's variants without AVX-512 (libm's exp/log among them), whatever this CPU has.
  . scripts/lib/cmake_configure.sh
  cmake_configure build-v3 -DCMAKE_BUILD_TYPE=Release -DICLAB_NATIVE=OFF -DICLAB_BUILD_TESTS=OFF \
    -DCMAKE_CXX_FLAGS=-march=x86-64-v3
  cmake --build build-v3 -j "$(nproc)" --target iclab >&2
  reference=()
  [ -d build/fingerprints_work/out ] && reference=(--reference build/fingerprints_work)
  OPENBLAS_CORETYPE=Haswell GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD \
    scripts/fingerprints.sh --build build-v3 --work build-v3/fingerprints_work "${reference[@]}" ||
    { [ "$status" -ne 0 ] || status=1; }
fi
exit "$status"
