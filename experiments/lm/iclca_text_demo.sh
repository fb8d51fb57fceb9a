#!/usr/bin/env bash
# Exact ICLCA on real text (experiments/lm/README.md): for K held-out KJV chapters, the first M BPE tokens of the
# chapter are the prompt X', the next N tokens the input X. `iclab generate` continues [X'; X] greedily (the prompt in
# context) and X alone with the adapter `iclab convert --prompt-tokens X'` wrote; the script compares the generated
# tokens and the fp64 logits of every step.
#   experiments/lm/iclca_text_demo.sh RUN_DIR TOKENS.h5 [K=20] [M=100] [N=8] [NEW=16]
set -euo pipefail
run="${1:?usage: iclca_text_demo.sh RUN_DIR TOKENS.h5 [K] [M] [N] [NEW]}"; tokens="${2:?TOKENS.h5}"
count="${3:-20}"; prompt_len="${4:-100}"; input_len="${5:-8}"; new="${6:-16}"
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
  "$iclab" generate "$run" --prompt-tokens "$p,$x" --max-new-tokens "$new" --no-stop --quiet --out "$work/with_prompt$i.h5" >/dev/null
  "$iclab" convert "$run" --prompt-tokens "$p" --out "$work/adapter$i.h5" >/dev/null
  "$iclab" generate "$run" --prompt-tokens "$x" --adapter "$work/adapter$i.h5" --max-new-tokens "$new" --no-stop --quiet \
    --out "$work/with_adapter$i.h5" >/dev/null
done
/usr/bin/python3 - "$work" "$count" <<'PY'
import sys, h5py, numpy as np
work, count = sys.argv[1], int(sys.argv[2])
same, worst = 0, 0.0
for i in range(count):
    a, b = h5py.File(f"{work}/with_prompt{i}.h5", "r"), h5py.File(f"{work}/with_adapter{i}.h5", "r")
    same += np.array_equal(a["/generated"][()], b["/generated"][()])
    la, lb = a["/logits"][()], b["/logits"][()]
    for s in range(min(len(la), len(lb))):
        worst = max(worst, np.linalg.norm(lb[s] - la[s]) / np.linalg.norm(la[s]))
    if i < 3: print(f"prompt {i}: with prompt {a.attrs['text']!r} | with adapter {b.attrs['text']!r}")
print(f"identical greedy generations: {same}/{count}; largest relative logit error (fp64, any step): {worst:.3e}")
sys.exit(0 if same == count and worst <= 1e-12 else 1)
PY
