#!/usr/bin/env bash
# Paper 000 Figure 1 from a bias_training run: training loss and ICL accuracy against step, one colour per
# variant, mean over seeds with the min-max band, plus the smallest attention normalizer per evaluation.
#   scripts/plot/figure1.sh RUN_DIR [OUT.png]      (default OUT: RUN_DIR/figure1.png)
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/args.sh
usage="usage: scripts/plot/figure1.sh RUN_DIR [OUT.png]"
case "${1:-}" in -h|--help) echo "$usage"; exit 0 ;; esac
[ $# -ge 1 ] && [ $# -le 2 ] || usage_error "expected 1 or 2 arguments, got $#"
for arg in "$@"; do [[ "$arg" != -* ]] || usage_error "unknown option '$arg'"; done
[ -f "$1/results.h5" ] || usage_error "no $1/results.h5 (is $1 a finished bias_training run?)"
scripts/plot/setup.sh
exec /usr/bin/python3 scripts/plot/figure1.py "$@"
