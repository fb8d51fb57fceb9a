#!/usr/bin/env bash
# iclab's GPT-2 BPE against the reference encoder (npm gpt-3-encoder run by node), byte for byte (docs/text.md):
#   1. the committed Unicode class table equals what the installed node's regex engine gives for every code point;
#   2. a corpus of 1670 strings (many scripts, whitespace runs, contractions, numbers, emoji with ZWJ and skin tones,
#      combining marks, punctuation, CJK, invalid UTF-8): identical ids, decode(encode(s)) as the reference (== s for
#      valid UTF-8), and 400 random id sequences (cut characters) decoded as the reference;
#   3. the whole King James text (scripts/text/prepare_kjv.sh, which installs bible-kjv): `iclab tokenize --text-file`
#      of the dump, and tokens.h5's /train and /heldout, identical to the reference's ids.
# usage: test_bpe_reference.sh ICLAB_BINARY SOURCE_DIR     (exit 77 = skipped: no node)
set -euo pipefail
iclab="$(realpath "$1")"
source_dir="$(realpath "$2")"
command -v node >/dev/null || { echo "SKIP: node is not installed (the reference encoder runs in node)"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. The table.
node "$source_dir/scripts/text/gen_unicode_tables.js" - > "$work/unicode_tables.cpp"
if ! diff -q "$work/unicode_tables.cpp" "$source_dir/framework/text/unicode_tables.cpp" >/dev/null; then
  diff "$work/unicode_tables.cpp" "$source_dir/framework/text/unicode_tables.cpp" | head -20
  echo "FAIL: framework/text/unicode_tables.cpp differs from node $(node --version)'s classes: run scripts/text/gen_unicode_tables.js"
  exit 1
fi
echo "unicode tables: identical to node $(node --version) (Unicode $(node -p process.versions.unicode))"

# 2. The corpus.
tokenizer="$("$source_dir/scripts/text/setup_tokenizer.sh" | tail -n 1)"
reference="$("$source_dir/scripts/text/setup_tokenizer.sh" --print-reference | tail -n 1)"
harness="$source_dir/tests/text/bpe_reference.js"
node "$harness" corpus "$reference" "$work"
"$iclab" tokenize --tokenizer "$tokenizer" --encode-hex-lines "$work/corpus.hex" > "$work/iclab_ids.txt"
"$iclab" tokenize --tokenizer "$tokenizer" --decode-id-lines "$work/iclab_ids.txt" > "$work/iclab_roundtrip.hex"
"$iclab" tokenize --tokenizer "$tokenizer" --decode-id-lines "$work/random_ids.txt" > "$work/iclab_decode.hex"
node "$harness" check "$work"

# 3. The King James text.
kjv_tokens="$(ICLAB="$iclab" "$source_dir/scripts/text/prepare_kjv.sh" | tail -n 1)"
kjv="$(dirname "$kjv_tokens")"
start=$(date +%s%N)
"$iclab" tokenize --tokenizer "$tokenizer" --text-file "$kjv/kjv.txt" | tr ' ' '\n' > "$work/iclab_kjv.txt"
end=$(date +%s%N)
node "$harness" encode-file "$reference" "$kjv/kjv.txt" "$work/reference_kjv.txt"
cmp "$work/reference_kjv.txt" "$work/iclab_kjv.txt" || { echo "FAIL: the whole KJV text encodes differently"; exit 1; }
echo "kjv.txt: $(wc -l < "$work/iclab_kjv.txt") ids identical ($(stat -c %s "$kjv/kjv.txt") bytes; iclab tokenize $(( (end - start) / 1000000 )) ms wall, load included)"
/usr/bin/python3 - "$kjv_tokens" "$work" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for split in ("train", "heldout"):
        with open(f"{sys.argv[2]}/iclab_{split}.txt", "w") as out:
            out.write("".join(f"{i}\n" for i in f[split][()].tolist()))
PY
for split in train heldout; do
  node "$harness" encode-file "$reference" "$kjv/$split.txt" "$work/reference_$split.txt" "<|endoftext|>"
  cmp "$work/reference_$split.txt" "$work/iclab_$split.txt" || { echo "FAIL: tokens.h5 /$split differs from the reference"; exit 1; }
  echo "tokens.h5 /$split: $(wc -l < "$work/iclab_$split.txt") ids identical"
done
echo "test_bpe_reference: all identical"
