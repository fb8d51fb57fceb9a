#!/usr/bin/env bash
# Every experiment that reproduces a paper claim, then the report. A profile is the sweep file
# configs/reproduce/<profile>.yaml (one run per config) and, when present, configs/reproduce/<profile>_*.yaml
# (the claims on trained models, over >= 3 training seeds; paper 003 Part B's paired grids); finished runs are skipped. Then the report
# (results/report/index.html: one claims table per paper at the top, pooled over seeds by `iclab claims`) and the
# page docs/reproduction.md (docs/reproduction_<profile>.md for other profiles): claims, verdicts, wall times,
# commit, CPU.
#   scripts/reproduce.sh --profile quick|paper [--jobs N] [--check]
# --jobs: parallel runs (default: the machine's cores; each run then gets cores / jobs threads).
# --check: write nothing under docs/; exit 1 when any claim's verdict differs from the committed page.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=quick; jobs=$(nproc); check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) echo "usage: scripts/reproduce.sh --profile quick|paper [--jobs N] [--check]" >&2; exit 2 ;;
  esac
done
[ -f "configs/reproduce/$profile.yaml" ] || { echo "reproduce: no profile $profile (configs/reproduce/*.yaml)" >&2; exit 2; }
page=docs/reproduction.md
[ "$profile" = quick ] || page=docs/reproduction_$profile.md
if [ "$check" -eq 1 ] && [ ! -f "$page" ]; then echo "reproduce: --check needs the committed $page" >&2; exit 2; fi
scripts/setup.sh
scripts/plot/setup.sh
scripts/text/prepare_kjv.sh >/dev/null  # iclaa_lm's token file and tokenizer (cached: a second run writes nothing)
. scripts/lib/apt_ensure.sh
apt_ensure "report setup" python3-pandas python3-yaml
start=$(date +%s)
status=0
sweeps=()
files=("configs/reproduce/$profile.yaml")
for extra in configs/reproduce/"${profile}"_*.yaml; do [ -f "$extra" ] && files+=("$extra"); done
part=0
for file in "${files[@]}"; do
  part=$((part + 1))
  echo "reproduce: part $part of ${#files[@]}: $file ($(build/iclab sweep "$file" --dry-run | grep -c pending || true) runs pending), --jobs $jobs" >&2
  sweep=$(build/iclab sweep "$file" --jobs "$jobs" | tail -n 1) || status=$?
  [ -d "$sweep" ] || { echo "reproduce: the sweep $file did not start (exit $status)" >&2; exit "$status"; }
  sweeps+=("$sweep")
done
/usr/bin/python3 scripts/report/make_report.py "${sweeps[@]}" --out results/report \
  --title "iclab reproduction: profile $profile, commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (dirty)')"
wall=$(( $(date +%s) - start ))
printf '\nWall time of scripts/reproduce.sh --profile %s --jobs %s: %d min %02d s on %s (%s cores).\n' "$profile" "$jobs" \
  $((wall / 60)) $((wall % 60)) "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" >> results/report/reproduction.md
if [ "$check" -eq 1 ]; then
  /usr/bin/python3 - "$page" results/report/reproduction.md <<'PY' || exit 1
import sys
sys.path.insert(0, "scripts/report")
from verdicts import compare, parse_verdict_keys
try:
    committed, measured = (parse_verdict_keys(open(p).read()) for p in sys.argv[1:3])
except ValueError as e:
    print(f"reproduce --check: {sys.argv[1]}: {e}", file=sys.stderr)
    sys.exit(2)
differences = compare(committed, measured)
for line in differences:
    print("reproduce --check: " + line, file=sys.stderr)
print(f"reproduce --check: {len(measured)} claims, {len(differences)} verdicts differ from {sys.argv[1]}", file=sys.stderr)
sys.exit(1 if differences else 0)
PY
else
  cp results/report/reproduction.md "$page"
  echo "reproduce: wrote $page" >&2
fi
scripts/report/screenshot.sh results/report/index.html results/report/screenshot.png >/dev/null || echo "reproduce: no screenshot (chromium failed)" >&2
echo "reproduce: profile $profile, $wall s wall time; report results/report/index.html" >&2
[ "$status" -eq 0 ] || echo "reproduce: some runs failed (see the sweeps' manifest.csv)" >&2
exit "$status"
