#!/usr/bin/env bash
# A screenshot of a report page in headless Chromium (Debian's chromium, installed when missing), and the page's
# rendered DOM beside it (for checking that the tables rendered).
#   scripts/report/screenshot.sh results/report/index.html [OUT.png]
# Both files are written beside their targets and renamed over them. Exit status: 0 written; 2 bad arguments (usage
# line: not one or two arguments, no such page, an OUT that is not a .png name in an existing folder or is the page);
# 1 chromium failed (nothing replaced).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/args.sh"
usage="usage: scripts/report/screenshot.sh PAGE.html [OUT.png]"
case "${1:-}" in -h|--help) echo "$usage"; exit 0 ;; esac
[ $# -ge 1 ] && [ $# -le 2 ] || usage_error "expected 1 or 2 arguments, got $#"
for arg in "$@"; do [[ "$arg" != -* ]] || usage_error "unknown option '$arg'"; done
[ -f "$1" ] || usage_error "no page $1"
page=$(realpath "$1"); out=${2:-$(dirname "$page")/screenshot.png}
[[ "$out" == *.png ]] || usage_error "OUT must end in .png, got '$out'"
[ -d "$(dirname "$out")" ] || usage_error "no folder $(dirname "$out") for $out"
dom="${out%.png}.dom.html"
for target in "$out" "$dom"; do
  [ ! -e "$target" ] || [ -f "$target" ] || usage_error "$target exists and is not a file"
  [ "$(realpath -m -- "$target")" != "$page" ] || usage_error "$target is the page itself"
done
. "$(dirname "${BASH_SOURCE[0]}")/../lib/apt_ensure.sh"
apt_ensure "report setup" chromium
profile=$(mktemp -d)
shot=$(mktemp "$(dirname "$out")/.screenshot.XXXXXX.png"); dump=$(mktemp "$(dirname "$out")/.dom.XXXXXX.html")
trap 'rm -rf "$profile"; rm -f "$shot" "$dump"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync "--user-data-dir=$profile" --hide-scrollbars)
chromium "${flags[@]}" --window-size=1400,2400 "--screenshot=$shot" "file://$page" >/dev/null 2>&1
chromium "${flags[@]}" --dump-dom "file://$page" 2>/dev/null > "$dump"
[ -s "$shot" ] || { echo "screenshot: chromium wrote no screenshot" >&2; exit 1; }
chmod 644 "$shot" "$dump"
mv -f "$shot" "$out"; mv -f "$dump" "$dom"
echo "$out"
