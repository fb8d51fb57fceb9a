#!/usr/bin/env bash
# Every experiment that reproduces a paper claim, then the report. A profile is the sweep file
# configs/reproduce/<profile>.yaml (one run per config) and, when present, configs/reproduce/<profile>_*.yaml
# (the claims on trained models, over >= 5 training seeds; paper 003 Part B's paired grids), all run as one queue, longest
# estimated job first, with progress and an ETA for the whole profile; finished runs are skipped. Then the report
# (results/report/index.html: one claims table per paper at the top, pooled over seeds by `iclab claims`) and the
# page docs/reproduction.md (docs/reproduction_<profile>.md for other profiles): claims, verdicts, wall times,
# commit, CPU, and in each experiment README the block of the claims it explains (scripts/report/readme_claims.py).
#   scripts/reproduce.sh --profile quick|paper [--jobs N] [--check | --plan | --report-only]
# --jobs: parallel runs (default: the machine's cores; each run then gets cores / jobs threads).
# --check: write nothing under docs/; exit 1 when any run's values differ from the committed page's (each run's
#   fingerprint against docs/reproduction[_<profile>]_fingerprints.txt, written with the page), or any claim's verdict,
#   or (quick) a committed README claims block differs from the committed page.
# --plan: run nothing; list every job of the profile with its state (finished, interrupted, pending) and the
#   experiment's estimate of its memory and work, with each part's total, and write docs/reproduction_plan_<profile>.md.
# --report-only: run nothing; the report, the page and the README blocks from the runs finished so far (a long
#   profile run in parts); the title says how many of the profile's jobs had finished when some had not.
# Without --check or --report-only, docs/ is written only when every job of the profile finished: a sweep that was
#   stopped (SIGTERM, Ctrl-C) or had a failed job writes its report under results/report and leaves docs/ untouched.
# ICLAB=PATH: use that iclab binary and skip scripts/setup.sh (the build); default build/iclab, built first.
# Exit status: 0 done; 1 a run, the report or a step failed, or --check found a verdict that differs; 2 bad
# arguments (a usage line on stderr) or a profile the sweep refuses, with nothing written.
set -euo pipefail
if [ -n "${ICLAB:-}" ]; then  # before the cd below: a relative ICLAB is relative to the caller's folder
  [ -x "$ICLAB" ] && [ -f "$ICLAB" ] || { echo "reproduce: ICLAB=$ICLAB is not an executable file" >&2; exit 2; }
  ICLAB=$(realpath -- "$ICLAB")
fi
cd "$(dirname "$0")/.."
profile=quick; jobs=$(nproc); check=0; plan=0; report_only=0
usage="usage: scripts/reproduce.sh --profile quick|paper [--jobs N] [--check | --plan | --report-only]"
bad_usage() { echo "reproduce: $1" >&2; echo "$usage" >&2; exit 2; }
# An option's value: present and not the next option (--profile --plan is a missing value, not a profile named --plan).
value() { [ $# -ge 2 ] && [ -n "$2" ] && [[ "$2" != -* ]] || bad_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) value "$@"; profile=$2; shift 2 ;;
    --profile=*) profile=${1#*=}; shift ;;
    --jobs) value "$@"; jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    --check) check=1; shift ;;
    --plan) plan=1; shift ;;
    --report-only) report_only=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done
[ $((check + plan + report_only)) -le 1 ] || bad_usage "--check, --plan and --report-only exclude each other"
[[ "$profile" =~ ^[a-z0-9_]+$ ]] || bad_usage "bad profile name '$profile' (letters, digits, _)"
[[ "$jobs" =~ ^[1-9][0-9]{0,3}$ ]] || bad_usage "--jobs must be an integer in [1, 9999], not '$jobs'"
[ -f "configs/reproduce/$profile.yaml" ] || bad_usage "no profile $profile (configs/reproduce/*.yaml)"
iclab=${ICLAB:-build/iclab}
setup() { [ -n "${ICLAB:-}" ] || TARGETS=iclab scripts/setup.sh; }
page=docs/reproduction.md
[ "$profile" = quick ] || page=docs/reproduction_$profile.md
fingerprints=${page%.md}_fingerprints.txt  # one fingerprint per run (scripts/fingerprints/profile_fingerprints.py)
if [ "$check" -eq 1 ] && [ ! -f "$page" ]; then echo "reproduce: --check needs the committed $page" >&2; exit 2; fi
files=("configs/reproduce/$profile.yaml")
for extra in configs/reproduce/"${profile}"_*.yaml; do [ -f "$extra" ] && files+=("$extra"); done
if [ "$plan" -eq 1 ]; then
  setup
  out=docs/reproduction_plan_$profile.md
  # Every part's listing first, in a folder of this run's own; the page is written beside its target under a unique
  # name and renamed over it only when every part was listed: a refused plan leaves the old page and no stray file.
  work=$(mktemp -d); tmp=""
  trap 'rm -rf "$work"; [ -z "$tmp" ] || rm -f "$tmp"' EXIT
  part=0
  for file in "${files[@]}"; do
    part=$((part + 1))
    rc=0; "$iclab" sweep "$file" --dry-run >"$work/$part.out" 2>"$work/$part.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
      cat "$work/$part.err" >&2
      echo "reproduce: --plan refused: iclab sweep $file --dry-run exited $rc; nothing written" >&2
      [ "$rc" -eq 2 ] && exit 2
      exit 1
    fi
  done
  tmp=$(mktemp "docs/.reproduction_plan_$profile.md.XXXXXX")
  {
    echo "# iclab reproduction plan: profile $profile, commit $(git rev-parse --short HEAD)"
    echo
    echo "Generated by \`scripts/reproduce.sh --profile $profile --plan\` (runs nothing); do not edit. Each job: its state in the"
    echo "results folder of this checkout and the experiment's own estimate (framework/run/memory_estimate.hpp): memory is"
    echo "what the run needs at least (iclca_exactness skips a size that does not fit), time is the work at a nominal"
    echo "50 GFLOP/s, which measured runs on a 2-core AMD EPYC put between 37 and 103 GFLOP/s (slower under load)."
    echo "A paper 003 Part B run whose lr-fallback detector fires trains a second time (not in its estimate)."
    echo "Measured wall times of finished runs: docs/reproduction.md and each experiment's README."
    echo "Machine of this listing: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(date -u +%Y-%m-%d)."
    part=0
    for file in "${files[@]}"; do
      part=$((part + 1))
      echo; echo "## $file"; echo; echo '```'
      sed '$d' "$work/$part.out"   # the last line is the sweep folder
      cat "$work/$part.err"
      echo '```'
    done
  } > "$tmp"
  chmod 644 "$tmp"   # mktemp makes it 600
  mv -f "$tmp" "$out"; tmp=""
  grep -h "^iclab: sweep" "$out" >&2 || true
  echo "reproduce: wrote $out" >&2
  exit 0
fi
setup
scripts/plot/setup.sh
ICLAB="$iclab" scripts/text/prepare_kjv.sh >/dev/null  # iclaa_lm's token file and tokenizer (cached: a second run writes nothing)
. scripts/lib/apt_ensure.sh
apt_ensure "report setup" python3-pandas python3-yaml
start=$(date +%s)
status=0
sweeps=()
part=0
finished=0; total=0
listings=results/report/unfinished  # each part's --dry-run listing: the partial page lists the jobs not finished
rm -rf "$listings"
if [ "$report_only" -eq 1 ]; then
  for file in "${files[@]}"; do
    part=$((part + 1))
    listing=$("$iclab" sweep "$file" --dry-run 2>/dev/null)
    finished=$((finished + $(grep -c '^finished ' <<<"$listing" || true)))
    total=$((total + $(grep -c -E '^(finished|pending|interrupted|stale|running) ' <<<"$listing" || true)))
    mkdir -p "$listings"
    printf '%s\n%s\n' "$file" "$listing" > "$listings/$(printf '%02d' "$part").listing"
    sweep=$(tail -n 1 <<<"$listing")
    [ -d "$sweep" ] && sweeps+=("$sweep")
  done
else
  # Every part in one queue, longest estimated job first (iclab sweep A.yaml B.yaml ...): a long job of one part
  # never holds up the others while a core idles; the progress lines and the ETA cover the whole profile.
  echo "reproduce: ${#files[@]} parts of profile $profile in one queue, --jobs $jobs: ${files[*]}" >&2
  folders=$(mktemp)
  "$iclab" sweep "${files[@]}" --jobs "$jobs" > "$folders" || status=$?
  mapfile -t sweeps < <(tail -n "${#files[@]}" "$folders")
  rm -f "$folders"
  started=1
  [ "${#sweeps[@]}" -eq "${#files[@]}" ] || started=0
  for sweep in "${sweeps[@]}"; do [ -d "$sweep" ] || started=0; done
  [ "$started" -eq 1 ] || { echo "reproduce: the profile's sweeps did not start (exit $status)" >&2; exit "$status"; }
fi
# docs/ (the page, its fingerprints, the README blocks) is written only from a sweep whose every job finished, or on
# request (--report-only, which marks a partial page so): a sweep stopped (SIGTERM, Ctrl-C, a session's end) or with
# a failed job leaves docs/ as committed and writes its report under results/report only.
write_docs=1
[ "$check" -eq 0 ] || write_docs=0
[ "$report_only" -eq 1 ] || [ "$status" -eq 0 ] || write_docs=0
title="iclab reproduction: profile $profile, commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (dirty)')"
if [ "$report_only" -eq 1 ]; then
  [ "${#sweeps[@]}" -gt 0 ] || { echo "reproduce: --report-only: no run of profile $profile has started" >&2; exit 1; }
  # every job finished (a profile run in parts, or reported at a later commit whose fingerprints are the runs'): no "partial"
  [ "$finished" -eq "$total" ] || title="$title (partial: $finished of $total jobs finished)"
fi
/usr/bin/python3 scripts/report/make_report.py "${sweeps[@]}" --iclab "$iclab" --out results/report --title "$title" --page "$page" --profile "$profile" \
  --unfinished "$listings"
wall=$(( $(date +%s) - start ))
[ "$report_only" -eq 1 ] || printf '\nWall time of scripts/reproduce.sh --profile %s --jobs %s: %d min %02d s on %s (%s cores).\n' "$profile" "$jobs" \
  $((wall / 60)) $((wall % 60)) "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" >> results/report/reproduction.md
if [ "$check" -eq 1 ]; then
  # Values first: every run's fingerprint against the page's (bit for bit, clocks left out), then the verdicts.
  values_status=0
  if [ -f "$fingerprints" ]; then
    /usr/bin/python3 scripts/fingerprints/profile_fingerprints.py --check "$fingerprints" "${sweeps[@]}" || values_status=$?
    [ "$values_status" -le 1 ] || exit "$values_status"
  else
    echo "reproduce --check: no $fingerprints committed: values not compared, verdicts only" >&2
  fi
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
  [ "$values_status" -eq 0 ] || exit 1
elif [ "$write_docs" -eq 0 ]; then
  echo "reproduce: the sweep ended with status $status (stopped, or a job failed): docs/ left as it was; the report is" \
       "results/report; resume with the same command, or write a partial page with --report-only" >&2
  echo "reproduce: profile $profile, $wall s wall time; report results/report/index.html" >&2
  exit "$status"
else
  page_tmp=$(mktemp "$(dirname "$page")/.$(basename "$page").XXXXXX")
  cp results/report/reproduction.md "$page_tmp" && chmod 644 "$page_tmp" && mv -f "$page_tmp" "$page"
  echo "reproduce: wrote $page" >&2
  /usr/bin/python3 scripts/fingerprints/profile_fingerprints.py --write "$fingerprints" "${sweeps[@]}"
fi
# --check: the READMEs whose block differs from this (fresh) report are listed, not failed: a block names the report's
# title, whose commit is the checking clone's; the values were compared above (fingerprints) and the verdicts too.
# Hand edits fail below (readme_claims.py --against-page: the committed blocks against the committed page), as they
# fail ctest readme_claims_page.
readme_status=0
/usr/bin/python3 scripts/report/readme_claims.py results/report/readme_blocks.json --profile "$profile" \
  $([ "$check" -eq 1 ] && echo --check) || readme_status=$?
[ "$readme_status" -eq 0 ] || { [ "$check" -eq 1 ] && [ "$readme_status" -eq 1 ]; } || exit "$readme_status"
# --check fails on a committed README block that differs from the committed page (rows, details entries, counts:
# third audit of issue 45), as ctest readme_claims_page does; the paper page joins when it is regenerated in the new
# format (its blocks are the old report's until then).
if [ "$check" -eq 1 ] && [ "$profile" = quick ]; then
  /usr/bin/python3 scripts/report/readme_claims.py --against-page "$page" --profile "$profile" || {
    echo "reproduce: --check: a README claims block differs from $page (above)" >&2; exit 1; }
fi
scripts/report/screenshot.sh results/report/index.html results/report/screenshot.png >/dev/null || echo "reproduce: no screenshot (chromium failed)" >&2
echo "reproduce: profile $profile, $wall s wall time; report results/report/index.html" >&2
[ "$status" -eq 0 ] || echo "reproduce: some runs failed (see the sweeps' manifest.csv)" >&2
exit "$status"
