#!/usr/bin/env bash
# Paper 000 Figure 1 from a bias_training run: training loss and ICL accuracy against step, one colour per
# variant, mean over seeds with the min-max band, plus the smallest attention normalizer per evaluation.
#   scripts/plot/figure1.sh RUN_DIR [OUT.png]      (default OUT: RUN_DIR/figure1.png)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: scripts/plot/figure1.sh RUN_DIR [OUT.png]" >&2; exit 2; }
scripts/plot/setup.sh
exec /usr/bin/python3 scripts/plot/figure1.py "$@"
