"""Ctrl-C during iclab.run: the trainer stops after its step with a checkpoint and the call raises KeyboardInterrupt
saying how to resume; iclab.run(resume=...) then finishes the run."""
import os
import signal
import subprocess
import sys
import time

from conftest import QUICK_INDUCTION

SCRIPT = """
import sys, iclab
try:
    iclab.run(sys.argv[1], ["train.steps=200000", "eval.every=100000", "train.batch_size=8", "output.dir=" + sys.argv[2]])
except KeyboardInterrupt as stop:
    print("KeyboardInterrupt:", stop, flush=True)
    sys.exit(3)
print("finished without an interrupt", flush=True)
"""


def test_ctrl_c_raises_keyboard_interrupt_after_a_checkpoint(scratch):
    out = scratch / "interrupted"
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, QUICK_INDUCTION, str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    deadline = time.time() + 120
    while time.time() < deadline and not any(out.glob("*/log.txt")) and child.poll() is None:
        time.sleep(0.2)
    time.sleep(1.0)  # training
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=300)
    assert child.returncode == 3, stdout + stderr
    assert "KeyboardInterrupt: iclab: stopped after step" in stdout and "iclab.run(resume=" in stdout
    run_dir = stdout.split('iclab.run(resume="')[1].split('"')[0]
    assert os.path.isfile(os.path.join(run_dir, "checkpoint.h5"))
    assert not os.path.exists(os.path.join(run_dir, "results.h5"))


def test_stop_after_then_resume_finishes(scratch):
    import iclab
    overrides = ["train.steps=30", "train.warmup_steps=5", "eval.every=10", "eval.sequences=16", "train.batch_size=8"]
    run_dir = iclab.run(QUICK_INDUCTION, overrides, out=scratch / "resumed", stop_after=10)
    assert os.path.isfile(os.path.join(run_dir, "checkpoint.h5"))
    run = iclab.run(resume=run_dir)
    assert run.run_dir == os.path.abspath(run_dir)
    assert run.config["train"]["steps"] == 30


LONG_CALL = """
import sys, time, numpy as np, iclab
model = iclab.Model(sys.argv[1], threads=1)
ids = np.zeros((256, 64), dtype=np.int32)
print("started", flush=True)
start = time.time()
try:
    while time.time() - start < 120:  # calls of ~0.1 s: the signal lands inside one (GIL released) almost surely
        model.logits(ids)
except KeyboardInterrupt:
    print("KeyboardInterrupt after %.1f s" % (time.time() - start), flush=True)
    sys.exit(3)
print("returned without an interrupt", flush=True)
"""


def test_ctrl_c_during_a_long_logits_call_raises_keyboard_interrupt(induction_run):
    """Without an interrupt scope a call finishes its forward (the GIL released), then Python's pending SIGINT is
    raised: no result is returned, and the process goes on."""
    child = subprocess.Popen([sys.executable, "-c", LONG_CALL, induction_run], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert child.stdout.readline().strip() == "started"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=600)
    assert child.returncode == 3, stdout + stderr
    assert "KeyboardInterrupt after" in stdout
