#!/usr/bin/env bash
# The worked example of README.md and docs/adapters.md, regenerated (issue 46, "one commit of record"): runs exactly
# the commands those transcripts show (train the quick induction-head model, seed 0; predict; convert a prompt into an
# adapter; predict with and without it; the two --out files compared) in a temporary folder with this checkout's
# build/iclab, and rewrites both transcripts as measured blocks naming the commit and CPU
# (docs/testing.md#measured-blocks). About 1-2 minutes on 2 cores.
#   scripts/report/worked_example.sh [--check]      --check: rewrite nothing, exit 1 if a transcript differs
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/args.sh
usage="usage: scripts/report/worked_example.sh [--check]"
check=""
case "${1:-}" in
  -h|--help) echo "$usage"; exit 0 ;;
  --check) check="--check"; shift ;;
esac
[ $# -eq 0 ] || usage_error "unexpected argument '$1'"
root=$(pwd)
[ -x build/iclab ] || usage_error "no build/iclab: build it first (scripts/setup.sh)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/iclab_worked_example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The transcripts show the commands as a user types them in a checkout: build/iclab, configs/, results/.
ln -s "$root/build" "$tmp/build"
ln -s "$root/configs" "$tmp/configs"
cd "$tmp"
iclab=build/iclab
run() { # run NAME COMMAND...: stdout to NAME.out, stderr kept apart (progress lines are not in the transcript)
  local name=$1; shift
  "$@" > "$name.out" 2> "$name.err" || { cat "$name.err" >&2; echo "worked_example: '$*' failed" >&2; exit 1; }
}
run train $iclab run configs/quick/induction_head.yaml
run_dir=$(tail -n 1 train.out)
[ "$run_dir" = "results/quick_induction_head_seed0" ] || { echo "worked_example: unexpected run folder $run_dir" >&2; exit 1; }
run predict_text $iclab predict results/quick_induction_head_seed0 --text QaXmbYcZpaXtbYrc --top 2
run convert $iclab convert results/quick_induction_head_seed0 --prompt QaXmbYcZdWeV --out qa.h5
run predict_adapter $iclab predict results/quick_induction_head_seed0 --adapter qa.h5 --text abcde --top 2
run predict_plain $iclab predict results/quick_induction_head_seed0 --text abcde --top 2
# predict --adapter against predict on [X'; X] (docs/adapters.md): the logits at the input's positions
run out_adapter $iclab predict results/quick_induction_head_seed0 --adapter qa.h5 --text abcdeQmXa --out with_adapter.h5
run out_prompt $iclab predict results/quick_induction_head_seed0 --text QaXmbYcZdWeVabcdeQmXa --out with_prompt.h5
commit=$(git -C "$root" rev-parse --short=12 HEAD)
# dirty = a change that can move bits: the READMEs, docs pages and figures this regeneration itself rewrites do not count
[ -z "$(git -C "$root" status --porcelain --untracked-files=no -- . ':!*.md' ':!docs/figures')" ] || commit="$commit-dirty"
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
rc=0; /usr/bin/python3 "$root/scripts/report/worked_example.py" $check --root "$root" --work "$tmp" --commit "$commit" --cpu "${cpu:-unknown}" || rc=$?
exit $rc
