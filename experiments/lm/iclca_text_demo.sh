#!/usr/bin/env bash
# Exact ICLCA on real text (experiments/lm/README.md): for K held-out KJV chapters, the first M BPE tokens of the
# chapter are the prompt X', the next N tokens the input X. `iclab generate` continues [X'; X] greedily (the prompt in
# context) and X alone with the adapter `iclab convert --method iclca --prompt-tokens X'` wrote; the script compares
# the generated tokens and the logits of every step, in DTYPE = float64, float32 or both (`generate --dtype`; the
# adapter is the same fp64 file, rounded to float by a float32 model). RUN_DIR must be an lm run with linearized
# attention (model.attention: linear, e.g. configs/quick/lm_kjv_linear.yaml): ICLCA is exact only there, and a
# softmax run is refused (its prompt converts only approximately, by ICLAA: experiments/iclaa_lm/README.md).
#   experiments/lm/iclca_text_demo.sh RUN_DIR TOKENS.h5 [K=20] [M=100] [N=8] [NEW=16] [DTYPE=both]
# K, M, N, NEW are integers >= 1. ICLAB (default build/iclab) is the iclab binary. Writes only in a temporary folder.
# Exit status:
#   0  exact: in every dtype checked, all K generations are identical and the largest relative logit error is
#      <= 1e-12 (float64) or <= 1e-5 (float32)
#   3  ran, and not exact (the line of the dtype that missed says FAIL)
#   2  bad input, nothing run: a usage line on stderr (an argument that is not a number >= 1, an unknown DTYPE, a
#      missing run or token file, a run that is not an lm run with linear attention, M + N + NEW beyond the model's
#      context, fewer than K usable chapters),
#      or iclab refused an input (its own exit 2)
#   1  a failure (iclab or Python failed)
set -euo pipefail
usage="usage: experiments/lm/iclca_text_demo.sh RUN_DIR TOKENS.h5 [K=20] [M=100] [N=8] [NEW=16] [DTYPE=float64|float32|both]"
bad_usage() { echo "iclca_text_demo.sh: $1" >&2; echo "$usage" >&2; exit 2; }
case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] && [ $# -le 7 ] || bad_usage "expected 2 to 7 arguments, got $#"
for arg in "$@"; do [[ "$arg" != -* ]] || bad_usage "unknown option '$arg' (the arguments are positional)"; done
run=$1; tokens=$2; count=${3:-20}; prompt_len=${4:-100}; input_len=${5:-8}; new=${6:-16}; dtype=${7:-both}
positive() { [[ "$2" =~ ^[1-9][0-9]{0,5}$ ]] || bad_usage "$1 must be an integer in [1, 999999], got '$2'"; }
positive K "$count"; positive M "$prompt_len"; positive N "$input_len"; positive NEW "$new"
case "$dtype" in
  float64|float32) dtypes=("$dtype") ;;
  both) dtypes=(float64 float32) ;;
  *) bad_usage "DTYPE must be float64, float32 or both, got '$dtype'" ;;
esac
[ -d "$run" ] || bad_usage "no run folder '$run'"
[ -f "$run/config.yaml" ] || bad_usage "'$run' is not an iclab run (no config.yaml)"
[ -f "$tokens" ] || bad_usage "no token file '$tokens' (scripts/text/prepare_kjv.sh writes data/kjv/tokens.h5)"
iclab="${ICLAB:-$(cd "$(dirname "$0")/../.." && pwd)/build/iclab}"
[ -x "$iclab" ] || { echo "iclca_text_demo.sh: $iclab is not built (scripts/setup.sh builds it, or set ICLAB)" >&2; exit 1; }
/usr/bin/python3 -c "import h5py, numpy, yaml" 2>/dev/null ||
  { echo "iclca_text_demo.sh: /usr/bin/python3 needs python3-h5py, python3-numpy, python3-yaml (scripts/test.sh installs them)" >&2; exit 1; }
# The run: an lm run with linearized attention (a config.yaml without model.attention has the default, linear) whose
# context holds M + N + NEW positions (generate stops at the context, and a cut generation would read as not exact).
/usr/bin/python3 - "$run/config.yaml" "$usage" "$((prompt_len + input_len + new))" <<'PY'
import sys, yaml
path, usage, positions = sys.argv[1], sys.argv[2], int(sys.argv[3])
def refuse(message):
    print(f"iclca_text_demo.sh: {message}\n{usage}", file=sys.stderr)
    sys.exit(2)
try:
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
    refuse(f"cannot read the run's config {path}: {e}")
if not isinstance(config, dict):
    refuse(f"{path} is not an iclab config (not a mapping)")
experiment = config.get("experiment")
if experiment != "lm":
    refuse(f"the run is a '{experiment}' run; this demo needs a language-model run (experiment: lm)")
model = config.get("model") if isinstance(config.get("model"), dict) else {}
attention = model.get("attention", "linear")
if attention != "linear":
    refuse(f"the run has {attention} attention: ICLCA is exact only for linearized attention (model.attention: linear, "
           "e.g. configs/quick/lm_kjv_linear.yaml). For a softmax model the prompt converts only approximately, by ICLAA "
           "(`iclab convert RUN --method iclaa`, experiments/iclaa_lm/README.md), which this exactness demo does not check.")
task = config.get("task") if isinstance(config.get("task"), dict) else {}
context = task.get("context_length")
if isinstance(context, int) and positions > context:
    refuse(f"M + N + NEW = {positions} positions exceed the model's context of {context} (task.context_length)")
PY
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$tokens" "$count" "$prompt_len" "$input_len" "$work" "$usage" <<'PY'
import sys, h5py, numpy as np
path, count, m, n, work, usage = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
def refuse(message):
    print(f"iclca_text_demo.sh: {message}\n{usage}", file=sys.stderr)
    sys.exit(2)
try:
    with h5py.File(path, "r") as f:
        if "heldout" not in f or not isinstance(f["heldout"], h5py.Dataset):
            refuse(f"{path} has no /heldout dataset (not an `iclab tokenize --out` token file)")
        ids = f["heldout"][()]
        end_of_text = int(f.attrs.get("end_of_text", 50256))
except OSError as e:
    refuse(f"cannot read the token file {path}: {e}")
if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
    refuse(f"{path}: /heldout is not a 1-D array of token ids")
chapters = np.split(ids, np.where(ids == end_of_text)[0])
chapters = [c[c != end_of_text] for c in chapters if (c != end_of_text).sum() >= m + n][:count]
if len(chapters) < count:
    refuse(f"only {len(chapters)} held-out chapters of {path} have M + N = {m + n} tokens, K = {count} asked")
for i, c in enumerate(chapters):
    open(f"{work}/prompt{i}", "w").write(",".join(map(str, c[:m])))
    open(f"{work}/input{i}", "w").write(",".join(map(str, c[m:m + n])))
PY
# An iclab call: its exit 2 (an input iclab refuses, e.g. more positions than the model has) is this script's 2.
call() {
  local rc=0
  "$iclab" "$@" >/dev/null || rc=$?
  [ "$rc" -eq 0 ] && return 0
  echo "iclca_text_demo.sh: iclab $1 exited $rc" >&2
  [ "$rc" -eq 2 ] && exit 2
  exit 1
}
# Progress on stderr (issue 44; the format of framework/core/progress.hpp): each chapter is a convert and 2 generates
# per dtype, seconds each on a large model.
demo_start=$(date +%s)
for ((i = 0; i < count; i++)); do
  elapsed=$(( $(date +%s) - demo_start ))
  eta=""; [ "$i" -gt 0 ] && eta=", about $(( elapsed * (count - i) / i )) s left"
  echo "iclca_text_demo.sh: chapter $((i + 1)) of $count: convert, then generate with the prompt and with the adapter (at ${elapsed} s$eta)" >&2
  p=$(cat "$work/prompt$i"); x=$(cat "$work/input$i")
  call convert "$run" --method iclca --prompt-tokens "$p" --out "$work/adapter$i.h5"
  for d in "${dtypes[@]}"; do
    call generate "$run" --prompt-tokens "$p,$x" --max-new-tokens "$new" --no-stop --quiet --dtype "$d" \
      --out "$work/with_prompt_${d}_$i.h5"
    call generate "$run" --prompt-tokens "$x" --adapter "$work/adapter$i.h5" --max-new-tokens "$new" --no-stop --quiet \
      --dtype "$d" --out "$work/with_adapter_${d}_$i.h5"
  done
done
/usr/bin/python3 - "$work" "$count" "${dtypes[@]}" <<'PY'
import sys, h5py, numpy as np
work, count, dtypes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
bar = {"float64": 1e-12, "float32": 1e-5}
ok = True
for d in dtypes:
    same, worst = 0, 0.0
    for i in range(count):
        a, b = h5py.File(f"{work}/with_prompt_{d}_{i}.h5", "r"), h5py.File(f"{work}/with_adapter_{d}_{i}.h5", "r")
        if a.attrs["dtype"] != d or b.attrs["dtype"] != d:
            print(f"iclca_text_demo.sh: {d}: generate wrote dtype {a.attrs['dtype']}, {b.attrs['dtype']}", file=sys.stderr)
            sys.exit(1)
        same += np.array_equal(a["/generated"][()], b["/generated"][()])
        la, lb = a["/logits"][()], b["/logits"][()]
        for s in range(min(len(la), len(lb))):
            error = np.linalg.norm(lb[s] - la[s]) / np.linalg.norm(la[s])
            worst = max(worst, error if np.isfinite(error) else np.inf)  # max() would drop a NaN
        if i < 3: print(f"{d} prompt {i}: with prompt {a.attrs['text']!r} | with adapter {b.attrs['text']!r}")
    passed = same == count and worst <= bar[d]  # a NaN error is not <= the bar: not exact
    ok = ok and passed
    print(f"{d}: identical greedy generations: {same}/{count}; largest relative logit error (any step): {worst:.3e} "
          f"(bar {bar[d]:.0e}: {'pass' if passed else 'FAIL'})")
if len(dtypes) == 2:  # the flag changes the arithmetic: float32 against float64, both with the prompt in context
    gap = max(np.linalg.norm(h5py.File(f"{work}/with_prompt_float32_{i}.h5", "r")["/logits"][0] -
                             h5py.File(f"{work}/with_prompt_float64_{i}.h5", "r")["/logits"][0]) /
              np.linalg.norm(h5py.File(f"{work}/with_prompt_float64_{i}.h5", "r")["/logits"][0]) for i in range(count))
    print(f"float32 against float64 with the prompt (first step, largest over prompts): {gap:.3e}")
sys.exit(0 if ok else 3)
PY
