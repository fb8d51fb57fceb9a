#!/usr/bin/env bash
# Exact ICLCA on real text (experiments/lm/README.md): for K held-out KJV chapters, the first M BPE tokens of the
# chapter are the prompt X', the next N tokens the input X. `iclab generate` continues [X'; X] greedily (the prompt in
# context) and X alone with the adapter `iclab convert --prompt-tokens X'` wrote; the script compares the generated
# tokens and the logits of every step, in DTYPE = float64, float32 or both (`generate --dtype`; the adapter is the
# same fp64 file, rounded to float by a float32 model). Exit 1 unless, in every dtype checked, all K generations are
# identical and the largest relative logit error is <= 1e-12 (float64) or <= 1e-5 (float32).
#   experiments/lm/iclca_text_demo.sh RUN_DIR TOKENS.h5 [K=20] [M=100] [N=8] [NEW=16] [DTYPE=both]
set -euo pipefail
run="${1:?usage: iclca_text_demo.sh RUN_DIR TOKENS.h5 [K] [M] [N] [NEW] [DTYPE]}"; tokens="${2:?TOKENS.h5}"
count="${3:-20}"; prompt_len="${4:-100}"; input_len="${5:-8}"; new="${6:-16}"; dtype="${7:-both}"
case "$dtype" in
  float64|float32) dtypes=("$dtype") ;;
  both) dtypes=(float64 float32) ;;
  *) echo "iclca_text_demo.sh: DTYPE must be float64, float32 or both, got '$dtype'" >&2; exit 2 ;;
esac
iclab="${ICLAB:-$(cd "$(dirname "$0")/../.." && pwd)/build/iclab}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$tokens" "$count" "$prompt_len" "$input_len" "$work" <<'PY'
import sys, h5py, numpy as np
path, count, m, n, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ids = h5py.File(path, "r")["/heldout"][()]
chapters = np.split(ids, np.where(ids == 50256)[0])
chapters = [c[c != 50256] for c in chapters if (c != 50256).sum() >= m + n][:count]
assert len(chapters) == count, f"only {len(chapters)} held-out chapters have {m + n} tokens"
for i, c in enumerate(chapters):
    open(f"{work}/prompt{i}", "w").write(",".join(map(str, c[:m])))
    open(f"{work}/input{i}", "w").write(",".join(map(str, c[m:m + n])))
PY
for ((i = 0; i < count; i++)); do
  p=$(cat "$work/prompt$i"); x=$(cat "$work/input$i")
  "$iclab" convert "$run" --prompt-tokens "$p" --out "$work/adapter$i.h5" >/dev/null
  for d in "${dtypes[@]}"; do
    "$iclab" generate "$run" --prompt-tokens "$p,$x" --max-new-tokens "$new" --no-stop --quiet --dtype "$d" \
      --out "$work/with_prompt_${d}_$i.h5" >/dev/null
    "$iclab" generate "$run" --prompt-tokens "$x" --adapter "$work/adapter$i.h5" --max-new-tokens "$new" --no-stop --quiet \
      --dtype "$d" --out "$work/with_adapter_${d}_$i.h5" >/dev/null
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
        assert a.attrs["dtype"] == d and b.attrs["dtype"] == d, f"{d}: generate wrote dtype {a.attrs['dtype']}, {b.attrs['dtype']}"
        same += np.array_equal(a["/generated"][()], b["/generated"][()])
        la, lb = a["/logits"][()], b["/logits"][()]
        for s in range(min(len(la), len(lb))):
            worst = max(worst, np.linalg.norm(lb[s] - la[s]) / np.linalg.norm(la[s]))
        if i < 3: print(f"{d} prompt {i}: with prompt {a.attrs['text']!r} | with adapter {b.attrs['text']!r}")
    passed = same == count and worst <= bar[d]
    ok = ok and passed
    print(f"{d}: identical greedy generations: {same}/{count}; largest relative logit error (any step): {worst:.3e} "
          f"(bar {bar[d]:.0e}: {'pass' if passed else 'FAIL'})")
if len(dtypes) == 2:  # the flag changes the arithmetic: float32 against float64, both with the prompt in context
    gap = max(np.linalg.norm(h5py.File(f"{work}/with_prompt_float32_{i}.h5", "r")["/logits"][0] -
                             h5py.File(f"{work}/with_prompt_float64_{i}.h5", "r")["/logits"][0]) /
              np.linalg.norm(h5py.File(f"{work}/with_prompt_float64_{i}.h5", "r")["/logits"][0]) for i in range(count))
    print(f"float32 against float64 with the prompt (first step, largest over prompts): {gap:.3e}")
sys.exit(0 if ok else 1)
PY
