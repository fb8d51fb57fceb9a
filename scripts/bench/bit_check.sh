#!/usr/bin/env bash
# Run the same experiments with two builds and compare their results bit for bit (issue 23: a change claimed
# bit-identical, e.g. a compiler flag or a fused kernel, checked on what the experiments publish, not only on one
# training step's export).
#   scripts/bench/bit_check.sh BUILD_A BUILD_B [RUNS_FILE] [OUT_DIR]
# RUNS_FILE (default scripts/bench/bit_check_runs.txt): one run per line, a config and its key=value overrides
# (# starts a comment). Each run goes to the same output folder under each build in turn (the recorded config is
# then the same), moved to OUT_DIR/A and OUT_DIR/B (default /tmp/iclab_bit_check); then
# scripts/bench/compare_exports.py --results compares every .h5 (wall times, rates and the host ignored).
# OUT_DIR is replaced only when an earlier bit_check made it (its marker file .iclab_bit_check); an existing folder
# it did not make is refused unless empty, and so is one that is, holds or lies above a build or the runs file.
# Exit status: the comparison's (0 all equal, 1 when any file differs); 2 for bad arguments (usage line, nothing
# written). A run's own exit status (e.g. a claim that fails) is shown and ignored: the question here is whether both
# builds give the same numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/args.sh
usage="usage: scripts/bench/bit_check.sh BUILD_A BUILD_B [RUNS_FILE] [OUT_DIR]"
case "${1:-}" in -h|--help) sed -n 2,17p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] && [ $# -le 4 ] || usage_error "expected 2 to 4 arguments, got $#"
for arg in "$@"; do [[ "$arg" != -* ]] || usage_error "unknown option '$arg'"; done
build_a=$1; build_b=$2; runs=${3:-scripts/bench/bit_check_runs.txt}; out=${4:-/tmp/iclab_bit_check}
for b in "$build_a" "$build_b"; do [ -x "$b/iclab" ] || usage_error "no $b/iclab"; done
[ -f "$runs" ] || usage_error "no runs file $runs"
out_real=$(realpath -m -- "$out")
for input in "$build_a" "$build_b" "$runs" "$PWD"; do
  input_real=$(realpath -m -- "$input")
  case "$input_real/" in
    "$out_real"/*) usage_error "OUT_DIR $out is, or lies above, the input $input" ;;
  esac
  case "$out_real/" in
    "$input_real"/*) [ "$input" = "$PWD" ] || usage_error "OUT_DIR $out lies inside the input $input" ;;
  esac
done
if [ -e "$out" ] || [ -L "$out" ]; then
  [ -d "$out" ] && [ ! -L "$out" ] || usage_error "OUT_DIR $out exists and is not a folder"
  if [ -f "$out/.iclab_bit_check" ]; then
    rm -rf "$out/A" "$out/B" "$out/run" "$out/A.log" "$out/B.log"   # what an earlier bit_check wrote there
  elif [ -n "$(ls -A "$out")" ]; then
    usage_error "OUT_DIR $out exists and was not made by bit_check (no .iclab_bit_check): remove it or name another"
  fi
fi
mkdir -p "$out/A" "$out/B"
echo "scripts/bench/bit_check.sh output folder: replaced by the next bit_check with this OUT_DIR" > "$out/.iclab_bit_check"
scratch="$out/run"
while IFS= read -r line; do
  line=${line%%#*}; read -r -a words <<< "$line"; [ ${#words[@]} -gt 0 ] || continue
  for side in A B; do
    build=$build_a; [ "$side" = B ] && build=$build_b
    start=$(date +%s)
    rc=0; "$build/iclab" run "${words[@]}" output.dir="$scratch" --quiet > "$out/$side.log" 2>&1 || rc=$?
    echo "bit_check: $side ${words[*]}: exit $rc, $(( $(date +%s) - start )) s" >&2
    cp -r "$scratch"/. "$out/$side/" && rm -rf "$scratch"
  done
done < "$runs"
/usr/bin/python3 scripts/bench/compare_exports.py --results "$out/A" "$out/B"
