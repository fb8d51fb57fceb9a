#!/usr/bin/env bash
# ctest (label slurm): a 4-job sweep submitted to Slurm gives the table the local pool gives. Exits 77 (ctest:
# skipped, with this message) when no Slurm cluster answers; scripts/slurm/local_cluster.sh starts one on this
# machine, and `scripts/test.sh --slurm` does that first.
#   test_slurm_sweep.sh ICLAB_BINARY SOURCE_DIR
set -euo pipefail
iclab=$1; cd "$2"
if ! command -v sbatch >/dev/null || ! sinfo -h >/dev/null 2>&1; then
  echo "no Slurm cluster answers (start one with scripts/slurm/local_cluster.sh): skipped"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tiny=(configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 eval.sequences=8
      train.batch_size=4 train.lr=1e-3,3e-3 seed=0:2)
local_dir=$("$iclab" run -m "${tiny[@]}" "output.dir=$tmp/local" --jobs 2 --quiet | tail -n 1)
slurm_dir=$("$iclab" run -m "${tiny[@]}" "output.dir=$tmp/slurm" --launcher slurm --cpus 1 | tail -n 1)
for _ in $(seq 1 600); do  # up to 10 minutes on a loaded machine
  [ "$(find "$slurm_dir" -mindepth 2 -maxdepth 2 -name results.h5 | wc -l)" -eq 4 ] && break
  sleep 1
done
"$iclab" collect "$local_dir" --out "$tmp/local.h5" >/dev/null
"$iclab" collect "$slurm_dir" --out "$tmp/slurm.h5" >/dev/null
grep -q ',done,0,' "$slurm_dir/manifest.csv"
/usr/bin/python3 - "$tmp/local.h5" "$tmp/slurm.h5" <<'PY'
import os, sys
import h5py
def table(path):
    with h5py.File(path, "r") as f:
        runs = f["runs"]
        names = [os.path.basename(d.decode()) for d in runs["run_dir"][()]]
        columns = ["train.lr", "seed", "final_icl_accuracy", "final_eval_loss", "final_eval.loss[icl]"]
        return {n: tuple(float(runs[c][i]) for c in columns) for i, n in enumerate(names)}
local, slurm = table(sys.argv[1]), table(sys.argv[2])
assert len(local) == 4 and local == slurm, (local, slurm)
print("slurm sweep: 4 jobs, the collected table equals the local pool's")
PY
