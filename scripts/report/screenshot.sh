#!/usr/bin/env bash
# A screenshot of a report page in headless Chromium (Debian's chromium, installed when missing), and the page's
# rendered DOM beside it (for checking that the tables rendered).
#   scripts/report/screenshot.sh results/report/index.html [OUT.png]
set -euo pipefail
page=$(realpath "$1"); out=${2:-$(dirname "$page")/screenshot.png}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/apt_ensure.sh"
apt_ensure "report setup" chromium
profile=$(mktemp -d); trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync "--user-data-dir=$profile" --hide-scrollbars)
chromium "${flags[@]}" --window-size=1400,2400 "--screenshot=$out" "file://$page" >/dev/null 2>&1
chromium "${flags[@]}" --dump-dom "file://$page" 2>/dev/null > "${out%.png}.dom.html"
echo "$out"
