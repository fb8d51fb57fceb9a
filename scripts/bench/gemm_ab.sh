#!/usr/bin/env bash
# The blocked GEMM kernel of this checkout against the same kernel at another commit and against OpenBLAS, in one
# process, alternating (scripts/bench/gemm_ab.cpp; docs/performance.md, "AVX2 tile"): the model's products per thread.
#   scripts/bench/gemm_ab.sh [--base REV] [--march ARCH] [REPEATS]
# --base: the commit whose framework/nn/small_gemm.hpp is the "base" kernel (default main); --march: the -march of the
# build (default native; x86-64-v3 builds the AVX2 tile); REPEATS: alternating repetitions (default 5). Compiled with
# the project's flags (-O3, contraction off, no -ffast-math) into a temporary folder removed on exit; prints a markdown
# table. The compiler runs at nice 19 (a build; the measurement after it at the caller's priority). To run the AVX2 build against OpenBLAS's AVX2 kernel on an AVX-512 CPU: OPENBLAS_CORETYPE=Haswell.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/args.sh"
usage="usage: scripts/bench/gemm_ab.sh [--base REV] [--march ARCH] [REPEATS]"
base=main march=native repeats=5
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) echo "$usage"; exit 0 ;;
    --base) [ $# -ge 2 ] || usage_error "--base needs a commit"; base=$2; shift 2 ;;
    --march)
      [ $# -ge 2 ] || usage_error "--march needs a value"
      [[ "$2" =~ ^[a-z0-9_.-]+$ ]] || usage_error "--march must be a -march value, got '$2'"
      march=$2; shift 2 ;;
    -*) usage_error "unknown option '$1'" ;;
    *) integer_in REPEATS "$1" 1 1000; repeats=$1; shift ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
git -C "$root" rev-parse --verify --quiet "$base^{commit}" >/dev/null || usage_error "--base: no commit '$base'"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the base kernel under another namespace, so that both compile into one program
git -C "$root" show "$base:framework/nn/small_gemm.hpp" |
  sed 's|^namespace iclab::nn {|namespace base_nn {|; s|^}  // namespace iclab::nn|}  // namespace base_nn|' >"$tmp/small_gemm_base.hpp"
grep -q '^namespace base_nn {' "$tmp/small_gemm_base.hpp" || { echo "gemm_ab.sh: $base's small_gemm.hpp has no namespace iclab::nn" >&2; exit 1; }
nice -n 19 g++ -std=c++17 -O3 -march="$march" -ffp-contract=off -fno-trapping-math -fopenmp -I"$root" -I"$tmp" \
  "$root/scripts/bench/gemm_ab.cpp" -o "$tmp/gemm_ab" -lopenblas
"$tmp/gemm_ab" "$repeats" "$(git -C "$root" rev-parse --short "$base")" "$march"
