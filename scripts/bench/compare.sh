#!/usr/bin/env bash
# iclab against the PyTorch reference of the same model (issue 3 item 8), same threads, as a markdown table.
#   scripts/bench/compare.sh [CONFIG ...]     default: configs/quick/induction_head.yaml configs/paper/induction_head.yaml
# Environment: THREADS (2), WARMUP (3), ITERS (10), OUT (build/bench: exports, results files, JSON).
# Per config:
#   1. the models are checked to be the same: `iclab bench --export` (fp64, batch 2, and fp32 at the
#      config's batch) and `torch_reference.py --check` compare logits, loss and every gradient;
#   2. `iclab bench` and `torch_reference.py` are timed (median of ITERS after WARMUP). PyTorch runs with
#      torch.set_num_threads(THREADS) and, since its BLAS is OpenBLAS with its own thread pool, once with
#      OPENBLAS_NUM_THREADS=1 and once with THREADS: the table reports its faster run.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads="${THREADS:-2}"
warmup="${WARMUP:-3}"
iters="${ITERS:-10}"
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
  build/iclab bench "$config" --threads "$threads" --warmup "$warmup" --iters "$iters" --out "$out/$name.iclab.h5" --overwrite >&2
  for blas in 1 "$threads"; do
    $python scripts/bench/torch_reference.py "$config" --threads "$threads" --blas-threads "$blas" --warmup "$warmup" \
      --iters "$iters" --json "$out/$name.torch_blas$blas.json" >&2
  done
  echo "load average after timing: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  rows+=("$config" "$out/$name.iclab.h5" "$out/$name.torch_blas1.json" "$out/$name.torch_blas$threads.json")
done

$python - "${rows[@]}" <<'EOF'
import json, sys
import h5py
args = sys.argv[1:]
print("| config | iclab train tok/s | torch train tok/s | ratio | iclab fwd tok/s | torch fwd tok/s | ratio "
      "| model GEMM GFLOP/s | sgemm GFLOP/s | % |")
print("|---|---|---|---|---|---|---|---|---|---|")
notes = []
for i in range(0, len(args), 4):
    config, iclab_path, torch_paths = args[i], args[i + 1], args[i + 2:i + 4]
    with h5py.File(iclab_path, "r") as f:
        a = {k: f.attrs[k] for k in f.attrs}
    runs = [json.load(open(p)) for p in torch_paths]
    best = max(runs, key=lambda r: r["train_tokens_per_s"])
    best_forward = max(runs, key=lambda r: r["forward_tokens_per_s"])
    for r in runs:  # the same model on the same batch
        if r["parameter_count"] != a["parameter_count"] or r["tokens_per_step"] != a["tokens_per_step"]:
            sys.exit(f"compare: {config}: torch has {r['parameter_count']} parameters and {r['tokens_per_step']} tokens "
                     f"per step, iclab {a['parameter_count']} and {a['tokens_per_step']}")
    print(f"| `{config}` | {a['train_tokens_per_s']:,.0f} | {best['train_tokens_per_s']:,.0f} "
          f"| {a['train_tokens_per_s'] / best['train_tokens_per_s']:.2f} | {a['forward_tokens_per_s']:,.0f} "
          f"| {best_forward['forward_tokens_per_s']:,.0f} | {a['forward_tokens_per_s'] / best_forward['forward_tokens_per_s']:.2f} "
          f"| {a['gemm_gflops']:.1f} | {a['blas_gflops']:.1f} | {100 * a['gemm_over_blas']:.0f} |")
    notes.append(f"- `{config}`: {a['parameter_count']:,} parameters, {a['tokens_per_step']} tokens/step, iclab "
                 f"{a['attention_form']} attention form, GEMMs {100 * a['gemm_share_of_step']:.0f}% of the step; torch "
                 + ", ".join(f"OPENBLAS_NUM_THREADS={r['openblas_num_threads']}: train {r['train_tokens_per_s']:,.0f}, "
                             f"fwd {r['forward_tokens_per_s']:,.0f} tok/s" for r in runs)
                 + f"; load {a['load_average_before']} -> {a['load_average_after']}")
print()
print("\n".join(notes))
EOF
