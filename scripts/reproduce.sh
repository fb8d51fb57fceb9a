#!/usr/bin/env bash
# Every experiment that reproduces a paper number or figure (configs/reproduce/<profile>.yaml, an iclab sweep
# file), skipping runs that finished before, then the report: results/report/index.html and report.md (every
# table with the paper's value beside ours and a verdict, every figure as PNG, the provenance) and a screenshot
# of the page in headless Chromium.
#   scripts/reproduce.sh --profile quick|paper [--jobs N]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=quick; jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "usage: scripts/reproduce.sh --profile quick|paper [--jobs N]" >&2; exit 2 ;;
  esac
done
[ -f "configs/reproduce/$profile.yaml" ] || { echo "reproduce: no profile $profile (configs/reproduce/*.yaml)" >&2; exit 2; }
scripts/setup.sh
scripts/plot/setup.sh
. scripts/lib/apt_ensure.sh
apt_ensure "report setup" python3-pandas python3-yaml
start=$(date +%s)
status=0
sweep=$(build/iclab sweep "configs/reproduce/$profile.yaml" --jobs "$jobs" | tail -n 1) || status=$?
[ -d "$sweep" ] || { echo "reproduce: the sweep did not start (exit $status)" >&2; exit "$status"; }
/usr/bin/python3 scripts/report/make_report.py "$sweep" --out results/report
scripts/report/screenshot.sh results/report/index.html results/report/screenshot.png || echo "reproduce: no screenshot (chromium failed)" >&2
echo "reproduce: profile $profile, $(( $(date +%s) - start )) s wall time; report results/report/index.html" >&2
[ "$status" -eq 0 ] || echo "reproduce: some runs failed (see $sweep/manifest.csv)" >&2
exit "$status"
