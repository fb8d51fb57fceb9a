"""ctest: scripts/python/iclab_runs.py against `iclab collect` on the same runs. Usage: test_iclab_runs.py ICLAB"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from iclab_runs import load_curves, load_run, load_runs  # noqa: E402

iclab, scratch = sys.argv[1], tempfile.mkdtemp(prefix="iclab_py_")
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
tiny = ["configs/quick/induction_head.yaml", "train.steps=12", "train.warmup_steps=2", "eval.every=6", "task.seq_len=16",
        "eval.sequences=8", "train.batch_size=4", f"output.dir={scratch}"]
done = subprocess.run([iclab, "run", "-m", *tiny, "train.lr=1e-3,3e-3", "seed=0:2", "--jobs", "2", "--quiet"], cwd=root,
                      capture_output=True, text=True, check=True)
sweep = done.stdout.strip().splitlines()[-1]
subprocess.run([iclab, "collect", sweep, "--out", os.path.join(scratch, "runs.h5")], cwd=root, check=True, capture_output=True)

runs = load_runs([sweep])
collected = load_runs(os.path.join(scratch, "runs.h5"))
assert len(runs) == 4 and len(collected) == 4, (len(runs), len(collected))
assert sorted(runs["train.lr"]) == [0.001, 0.001, 0.003, 0.003], list(runs["train.lr"])
assert isinstance(collected["run_dir"].iloc[0], str)
for column in ["train.lr", "seed", "final_icl_accuracy", "final_eval.accuracy[icl]"]:
    mine = dict(zip(runs["run_dir"], runs[column]))
    theirs = dict(zip(collected["run_dir"], collected[column]))
    for run_dir, value in mine.items():
        assert math.isclose(float(value), float(theirs[run_dir]), rel_tol=0, abs_tol=0), (column, value, theirs[run_dir])
run = load_run(runs["run_dir"].iloc[0])
assert run.curves["step"].dtype == "int64" and list(run.curves["step"]) == [6, 12]
assert run.tables["final_eval"]["position_kind"].tolist() == ["icl", "non_trigger", "first_trigger"]
curves = load_curves([sweep])
assert set(curves.columns) == {"run_dir", "curve", "step", "metric", "value"} and len(curves) > 0
print("iclab_runs: load_run, load_runs and load_curves agree with iclab collect on", len(runs), "runs")
shutil.rmtree(scratch)
