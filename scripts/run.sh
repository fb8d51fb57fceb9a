#!/usr/bin/env bash
# README command 1: set up, build, and run the default experiment (configs/quick/induction_head.yaml).
# Extra arguments are passed to `iclab run` (e.g. overrides: scripts/run.sh seed=3 train.steps=500).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
config="${ICLAB_CONFIG:-configs/quick/induction_head.yaml}"
start=$(date +%s)
run_dir=$(build/iclab run "$config" "$@" | tail -n 1)
end=$(date +%s)
echo
echo "results: $run_dir/results.h5  (config: $run_dir/config.yaml, log: $run_dir/log.txt)"
echo "wall time of the run: $((end - start)) s"
echo "inspect the model:   build/iclab predict $run_dir --text QaXmbYcZpaXtbYrc"
