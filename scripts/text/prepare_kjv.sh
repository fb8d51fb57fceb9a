#!/usr/bin/env bash
# The King James Bible as a token file for language-model training (docs/text.md).
#   scripts/text/prepare_kjv.sh [--heldout-every K]     (default K = 20)
# Installs the Debian packages bible-kjv + bible-kjv-text (scripts/lib/apt_ensure.sh) and GPT-2's tokenizer
# (scripts/text/setup_tokenizer.sh), dumps `bible -f Gen1:1-Rev22:21` (31102 verses, one a line, "Ge1:1 In the ..."),
# strips the verse references, cuts the text into its 1189 chapters (the documents) and holds out every K-th
# chapter in canonical order (chapters 20, 40, ..., 1180 for K = 20: 59 chapters); writes, in $ICLAB_DATA/kjv
# ($ICLAB_DATA/kjv_every<K> for another K; ICLAB_DATA defaults to data/ in the checkout):
#   kjv.txt       the dump as `bible` prints it (references kept)
#   train.txt, heldout.txt   one verse a line, chapters separated by a line "<|endoftext|>"
#   tokens.h5     `iclab tokenize --out`: /train and /heldout, chapters joined with <|endoftext|> (id 50256)
# Cached: files are replaced only when their content changes, and `iclab tokenize` leaves an up-to-date
# tokens.h5 alone, so a second run writes nothing. Last line of stdout: the path of tokens.h5.
# ICLAB (default build/iclab) is the iclab binary. Exit status: 0 done; 2 a bad argument (usage line, nothing done);
# 1 a failure (packages, the dump, the tokenizer, iclab).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${ICLAB_DATA:-$root/data}"
iclab="${ICLAB:-$root/build/iclab}"
. "$root/scripts/lib/args.sh"
usage="usage: scripts/text/prepare_kjv.sh [--heldout-every K]"
every=20
while [ $# -gt 0 ]; do
  case "$1" in
    --heldout-every) [ $# -ge 2 ] || usage_error "--heldout-every needs K"; every=$2; shift 2 ;;
    --heldout-every=*) every=${1#*=}; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
integer_in --heldout-every "$every" 2 1189
[ -x "$iclab" ] || { echo "prepare_kjv: $iclab is not built (scripts/setup.sh builds it, or set ICLAB)" >&2; exit 1; }

. "$root/scripts/lib/apt_ensure.sh"
apt_ensure prepare_kjv bible-kjv bible-kjv-text
tokenizer="$(ICLAB_DATA="$data" "$root/scripts/text/setup_tokenizer.sh" | tail -n 1)"

out="$data/kjv"
[ "$every" -eq 20 ] || out="$data/kjv_every$every"
mkdir -p "$out"
exec 9>"$out/.prepare.lock"
flock 9
work="$(mktemp -d "$out/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

bible -f "Gen1:1-Rev22:21" > "$work/kjv.txt"
verses=$(wc -l < "$work/kjv.txt")
[ "$verses" -eq 31102 ] || { echo "prepare_kjv: bible printed $verses lines, expected 31102 verses" >&2; exit 1; }
# Every line must be "<book><chapter>:<verse> <text>"; the book and chapter name the document.
awk -v every="$every" -v train="$work/train.txt" -v heldout="$work/heldout.txt" '
  {
    if (!match($0, /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ /)) { printf "prepare_kjv: line %d is not a verse: %s\n", NR, $0 > "/dev/stderr"; exit 1 }
    reference = substr($0, 1, RLENGTH - 1)
    chapter = reference; sub(/:[0-9]+$/, "", chapter)
    if (chapter != previous) {
      chapters++; previous = chapter
      file = (chapters % every == 0) ? heldout : train
      if (started[file]) print "<|endoftext|>" > file
      started[file] = 1
    }
    print substr($0, RLENGTH + 1) > file
  }
  END { if (chapters != 1189) { printf "prepare_kjv: %d chapters, expected 1189\n", chapters > "/dev/stderr"; exit 1 } }
' "$work/kjv.txt"

for f in kjv.txt train.txt heldout.txt; do
  cmp -s "$work/$f" "$out/$f" 2>/dev/null || mv "$work/$f" "$out/$f"
done
version="$(dpkg-query -W -f='${Version}' bible-kjv-text)"
sha="$(sha256sum "$out/kjv.txt" | cut -d' ' -f1)"
"$iclab" tokenize --tokenizer "$tokenizer" --out "$out/tokens.h5" --train "$out/train.txt" --heldout "$out/heldout.txt" \
  --document-separator "<|endoftext|>" \
  --source "Debian bible-kjv-text $version: bible -f Gen1:1-Rev22:21 (sha256 $sha), verse references stripped, one verse a line" \
  --split-rule "documents are the 1189 chapters in canonical order (Genesis 1 is chapter 1); chapter n is held out when n % $every == 0" \
  --overwrite | tail -n 1
