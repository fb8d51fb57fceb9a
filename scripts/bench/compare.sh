#!/usr/bin/env bash
# iclab against the PyTorch reference of the same model (issue 3 item 8; issue 13), same threads, as a markdown table.
#   scripts/bench/compare.sh [CONFIG ...]     default: configs/quick/induction_head.yaml configs/paper/induction_head.yaml
# A CONFIG is an induction-head config (task.triggers) or an in-context regression config (task.kind / task.format),
# e.g. the paper-003 cpu2 model: scripts/bench/compare.sh configs/cpu2/prefix_vs_causal.yaml
# Environment: THREADS (2), WARMUP (3), ITERS (10), REPEATS (3), OUT (build/bench: exports, results files, JSON).
# Per config:
#   1. the models are checked to be the same: `iclab bench --export` (fp64, batch 2, and fp32 at the
#      config's batch) and `torch_reference.py --check` compare logits (regression: outputs), loss and every gradient;
#   2. `iclab bench` and `torch_reference.py` are timed (median of ITERS after WARMUP), REPEATS times alternating;
#      the table gives each ratio's min and median over the repetitions, and names the CPU. PyTorch runs with
#      torch.set_num_threads(THREADS) and, since its BLAS is OpenBLAS with its own thread pool, once with
#      OPENBLAS_NUM_THREADS=1 and once with THREADS: the table reports its faster run.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads="${THREADS:-2}"
warmup="${WARMUP:-3}"
iters="${ITERS:-10}"
repeats="${REPEATS:-3}"
out="${OUT:-build/bench}"
python=/usr/bin/python3
if [ $# -gt 0 ]; then configs=("$@"); else configs=(configs/quick/induction_head.yaml configs/paper/induction_head.yaml); fi

scripts/bench/setup.sh
if [ ! -x build/iclab ] || [ -n "$(find experiments framework CMakeLists.txt -newer build/iclab -print -quit)" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$threads" --target iclab >&2
fi
mkdir -p "$out"

rows=()
for config in "${configs[@]}"; do
  name="$(basename "$(dirname "$config")")_$(basename "$config" .yaml)"
  echo "== $config" >&2
  build/iclab bench "$config" model.dtype=float64 train.batch_size=2 --iters 0 --export "$out/$name.export64.h5" --overwrite >&2
  $python scripts/bench/torch_reference.py --check "$out/$name.export64.h5" >&2
  build/iclab bench "$config" --iters 0 --export "$out/$name.export32.h5" --overwrite >&2
  $python scripts/bench/torch_reference.py --check "$out/$name.export32.h5" >&2
  echo "load average before timing: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  # Alternating, so that a change of load hits both sides: iclab, torch, torch, iclab, torch, torch, ...
  for rep in $(seq 1 "$repeats"); do
    build/iclab bench "$config" --threads "$threads" --warmup "$warmup" --iters "$iters" --out "$out/$name.iclab.rep$rep.h5" --overwrite >&2
    for blas in 1 "$threads"; do
      $python scripts/bench/torch_reference.py "$config" --threads "$threads" --blas-threads "$blas" --warmup "$warmup" \
        --iters "$iters" --json "$out/$name.torch_blas$blas.rep$rep.json" >&2
    done
  done
  echo "load average after timing: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  rows+=("$config" "$out/$name" "$threads")
done

cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
avx512=$(grep -qw avx512f /proc/cpuinfo && echo "AVX-512" || echo "no AVX-512")
echo "CPU: $cpu ($avx512), $(nproc) cores; $threads threads each side; $repeats alternating repetitions; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
echo
REPEATS="$repeats" $python - "${rows[@]}" <<'EOF'
import json, os, statistics, sys
import h5py
args = sys.argv[1:]
repeats = int(os.environ["REPEATS"])
print("| config | iclab train tok/s (median) | torch train tok/s (median) | train ratio min / median | iclab fwd tok/s "
      "| torch fwd tok/s | fwd ratio min / median | model GEMM GFLOP/s | sgemm GFLOP/s | OpenBLAS core |")
print("|---|---|---|---|---|---|---|---|---|---|")
notes = []
for i in range(0, len(args), 3):
    config, stem, threads = args[i], args[i + 1], args[i + 2]
    train_ratio, fwd_ratio, ours, theirs, ours_f, theirs_f = [], [], [], [], [], []
    for rep in range(1, repeats + 1):
        with h5py.File(f"{stem}.iclab.rep{rep}.h5", "r") as f:
            a = {k: f.attrs[k] for k in f.attrs}
        runs = [json.load(open(f"{stem}.torch_blas{b}.rep{rep}.json")) for b in sorted({"1", threads})]
        for r in runs:  # the same model on the same batch
            if r["parameter_count"] != a["parameter_count"] or r["tokens_per_step"] != a["tokens_per_step"]:
                sys.exit(f"compare: {config}: torch has {r['parameter_count']} parameters and {r['tokens_per_step']} tokens "
                         f"per step, iclab {a['parameter_count']} and {a['tokens_per_step']}")
        best = max(r["train_tokens_per_s"] for r in runs)  # PyTorch's faster BLAS setting, per repetition
        best_f = max(r["forward_tokens_per_s"] for r in runs)
        ours.append(a["train_tokens_per_s"]); theirs.append(best); ours_f.append(a["forward_tokens_per_s"]); theirs_f.append(best_f)
        train_ratio.append(a["train_tokens_per_s"] / best); fwd_ratio.append(a["forward_tokens_per_s"] / best_f)
    med = statistics.median
    print(f"| `{config}` | {med(ours):,.0f} | {med(theirs):,.0f} | {min(train_ratio):.2f} / {med(train_ratio):.2f} "
          f"| {med(ours_f):,.0f} | {med(theirs_f):,.0f} | {min(fwd_ratio):.2f} / {med(fwd_ratio):.2f} "
          f"| {a['gemm_gflops']:.1f} | {a['blas_gflops']:.1f} | {a.get('blas_core', '?')} |")
    notes.append(f"- `{config}` ({runs[0].get('model_kind', 'induction_head')} model, {a['dtype']}, attention "
                 f"{a['attention_form']}): {a['parameter_count']:,} parameters, {a['tokens_per_step']} tokens/step; train ratios by "
                 f"repetition " + ", ".join(f"{x:.2f}" for x in train_ratio) + "; forward " + ", ".join(f"{x:.2f}" for x in fwd_ratio))
print()
print("\n".join(notes))
EOF
