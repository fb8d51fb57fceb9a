#!/usr/bin/env bash
# README command 1: set up, build, and run the default experiment (configs/quick/induction_head.yaml).
# Extra arguments are passed to `iclab run` (e.g. overrides: scripts/run.sh seed=3 train.steps=500).
# ICLAB_CONFIG (default configs/quick/induction_head.yaml) is the config. Exit status: iclab run's (0 done, 2 a bad
# override, option or config, with iclab's message), 2 when ICLAB_CONFIG is not a file, 1 when the setup fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/args.sh
usage="usage: [ICLAB_CONFIG=CONFIG.yaml] scripts/run.sh [key=value ...] [iclab run options]"
config="${ICLAB_CONFIG:-configs/quick/induction_head.yaml}"
case "${1:-}" in -h|--help) echo "$usage"; exit 0 ;; esac
[ -f "$config" ] || usage_error "ICLAB_CONFIG: no config file '$config'"
TARGETS=iclab scripts/setup.sh   # only what the run needs: the tool, not the tests
start=$(date +%s)
stdout_copy=$(mktemp)
trap 'rm -f "$stdout_copy"' EXIT
build/iclab run "$config" "$@" | tee "$stdout_copy"   # the summary table stays visible
run_dir=$(tail -n 1 "$stdout_copy")                   # iclab prints the run folder last
end=$(date +%s)
echo
echo "results: $run_dir/results.h5  (config: $run_dir/config.yaml, log: $run_dir/log.txt)"
echo "wall time of the run: $((end - start)) s"
echo "inspect the model:   build/iclab predict $run_dir --text QaXmbYcZpaXtbYrc"
