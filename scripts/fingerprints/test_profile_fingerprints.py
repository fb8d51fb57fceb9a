#!/usr/bin/python3
"""ctest profile_fingerprints: `scripts/reproduce.sh --check` compares each run's values with the page's (issue 46).
A profile's runs written, then checked: equal; one ulp in one float of one run, a run missing and a run added are each
named and fail (exit 1); a bad file is refused (exit 2)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "profile_fingerprints.py")
failures = []


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
        if detail:
            print(detail)


def tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def make_run(folder, seed):
    os.makedirs(folder)
    rng = np.random.default_rng(seed)
    with h5py.File(os.path.join(folder, "results.h5"), "w") as f:
        f["/tables/loss"] = rng.standard_normal(16).astype(np.float32)
        f["/curves/step"] = np.arange(8, dtype=np.int64)
        f["/curves/elapsed_s"] = rng.random(8)  # a clock: never hashed
        f.attrs["seed"] = seed


with tempfile.TemporaryDirectory() as tmp:
    sweep = os.path.join(tmp, "sweeps", "reproduce_quick")
    for seed in range(3):
        make_run(os.path.join(sweep, f"seed-{seed}"), seed)
    os.makedirs(os.path.join(sweep, "logs"))  # not a run
    page = os.path.join(tmp, "reproduction_fingerprints.txt")
    written = tool("--write", page, sweep)
    check("--write succeeds", written.returncode == 0, written.stderr)
    lines = [l for l in open(page) if l.startswith("run\t")]
    check("one line per run", len(lines) == 3, "".join(lines))
    same = tool("--check", page, sweep)
    check("the same runs pass --check", same.returncode == 0, same.stderr)

    # A clock reading changes: still equal.
    with h5py.File(os.path.join(sweep, "seed-1", "results.h5"), "a") as f:
        f["/curves/elapsed_s"][0] += 1.0
    clocks = tool("--check", page, sweep)
    check("a clock reading is not a difference", clocks.returncode == 0, clocks.stderr)

    # One ulp in one float of one run: that run is named, exit 1.
    with h5py.File(os.path.join(sweep, "seed-1", "results.h5"), "a") as f:
        loss = f["/tables/loss"][...]
        loss[3] = np.nextafter(loss[3], np.float32(np.inf))
        f["/tables/loss"][...] = loss
    ulp = tool("--check", page, sweep)
    check("one ulp in one run fails --check", ulp.returncode == 1, ulp.stderr)
    check("... and names that run only", "reproduce_quick/seed-1: fingerprint" in ulp.stderr
          and "seed-0:" not in ulp.stderr and "seed-2:" not in ulp.stderr, ulp.stderr)

    # A dataset added after the page (a new column): the run differs, unless --ignore leaves it out.
    written = tool("--write", page, sweep)  # the page of the runs as they are now (seed-1 with its ulp)
    with h5py.File(os.path.join(sweep, "seed-0", "results.h5"), "a") as f:
        f["/claims/deterministic"] = np.array([1, 0], dtype=np.int64)
    added = tool("--check", page, sweep)
    check("a dataset added after the page fails --check", added.returncode == 1 and "seed-0: fingerprint" in added.stderr,
          added.stderr)
    ignored = tool("--ignore", "/claims/deterministic", "--check", page, sweep)
    check("... and passes with --ignore of its path", ignored.returncode == 0, ignored.stderr)
    check("--ignore of a path that is not /...: exit 2",
          tool("--ignore", "claims/deterministic", "--check", page, sweep).returncode == 2)

    # A run missing and a run added.
    os.rename(os.path.join(sweep, "seed-2"), os.path.join(sweep, "seed-9"))
    moved = tool("--check", page, sweep)
    check("a missing and a new run fail --check, both named", moved.returncode == 1
          and "seed-2: on the page, not among the runs" in moved.stderr
          and "seed-9: a run the page does not have" in moved.stderr, moved.stderr)

    # Bad input: exit 2, nothing written.
    with open(page, "a") as f:
        f.write("run\tbroken line\n")
    bad = tool("--check", page, sweep)
    check("a malformed fingerprints file is refused with exit 2", bad.returncode == 2, bad.stderr)
    check("no sweep folder: exit 2", tool("--check", page, os.path.join(tmp, "nope")).returncode == 2)
    check("no mode: exit 2", tool(page, sweep).returncode == 2)

sys.exit(1 if failures else 0)
