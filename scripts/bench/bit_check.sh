#!/usr/bin/env bash
# Run the same experiments with two builds and compare their results bit for bit (issue 23: a change claimed
# bit-identical, e.g. a compiler flag or a fused kernel, checked on what the experiments publish, not only on one
# training step's export).
#   scripts/bench/bit_check.sh BUILD_A BUILD_B [RUNS_FILE] [OUT_DIR]
# RUNS_FILE (default scripts/bench/bit_check_runs.txt): one run per line, a config and its key=value overrides
# (# starts a comment). Each run goes to the same output folder under each build in turn (the recorded config is
# then the same), moved to OUT_DIR/A and OUT_DIR/B (default /tmp/iclab_bit_check); then
# scripts/bench/compare_exports.py --results compares every .h5 (wall times, rates and the host ignored).
# Exit status: the comparison's (1 when any file differs). A run's own exit status (e.g. a claim that fails) is shown
# and ignored: the question here is whether both builds give the same numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
build_a=$1; build_b=$2; runs=${3:-scripts/bench/bit_check_runs.txt}; out=${4:-/tmp/iclab_bit_check}
for b in "$build_a" "$build_b"; do [ -x "$b/iclab" ] || { echo "bit_check: no $b/iclab" >&2; exit 2; }; done
[ -f "$runs" ] || { echo "bit_check: no runs file $runs" >&2; exit 2; }
rm -rf "$out"; mkdir -p "$out/A" "$out/B"
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
