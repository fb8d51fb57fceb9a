#!/usr/bin/python3
"""ctest bench_compare_exports: scripts/bench/compare_exports.py finds a change of one bit and, with --results, leaves
out exactly the clock readings (a run's wall times, a timing claim) and nothing that is a number of the model."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "compare_exports.py")


def write(path, err=(1.0, 2.0), elapsed=0.5, wall=3.0, timing_mean=8.0, ratio=0.25, speedup_metric=True, checks=("a", "b")):
    with h5py.File(path, "w") as f:
        f["tables/t/err"] = np.array(err)
        f["tables/t/elapsed_s"] = np.array([elapsed])
        f["tables/t/cond2_ratio_S_over_T"] = np.array([ratio])  # "S" is a matrix here, not seconds
        strings = h5py.string_dtype()
        f.create_dataset("tables/t/check", data=list(checks), dtype=strings)
        f.create_dataset("claims/id", data=["exact", "fast"], dtype=strings)
        metric = "speedup = time of A / time of B" if speedup_metric else "relative error"
        f.create_dataset("claims/metric", data=["relative error", metric], dtype=strings)
        f["claims/mean"] = np.array([1e-7, timing_mean])
        f.create_dataset("claim_values/id", data=["exact", "fast", "fast"], dtype=strings)
        f["claim_values/value"] = np.array([1e-7, timing_mean, timing_mean + 1])
        f.attrs["config"] = "model: {}"
        f.attrs["wall_time_s"] = wall
        f.attrs["start_time"] = f"2026-11-27T0{int(wall)}:00:00Z"


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True).returncode


def main():
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: exit {got}, expected {want}")

    with tempfile.TemporaryDirectory() as d:
        p = lambda name: os.path.join(d, name)
        write(p("a.h5"))
        write(p("clock.h5"), elapsed=0.7, wall=4.0, timing_mean=9.5)           # only clock readings differ
        write(p("bit.h5"), err=(1.0, np.nextafter(2.0, 3.0)))                  # one value one ulp off
        write(p("ratio.h5"), ratio=np.nextafter(0.25, 1.0))                    # a number whose name has an S
        write(p("notiming.h5"), timing_mean=9.5, speedup_metric=False)         # the same change on a non-timing claim
        write(p("string.h5"), checks=("a", "c"))                               # a string column differs
        expect("identical files", run(p("a.h5"), p("a.h5")), 0)
        expect("a string differs", run(p("a.h5"), p("string.h5")), 1)
        expect("clock readings, exports mode", run(p("a.h5"), p("clock.h5")), 1)
        expect("clock readings, --results", run("--results", p("a.h5"), p("clock.h5")), 0)
        expect("one ulp, --results", run("--results", p("a.h5"), p("bit.h5")), 1)
        expect("S_over_T, --results", run("--results", p("a.h5"), p("ratio.h5")), 1)
        expect("non-timing claim value, --results", run("--results", p("a.h5"), p("notiming.h5")), 1)
        os.makedirs(p("A/run1")); os.makedirs(p("B/run1"))
        write(p("A/run1/results.h5")); write(p("B/run1/results.h5"), elapsed=9.0)
        expect("folders, --results", run("--results", p("A"), p("B")), 0)
        write(p("B/run1/results.h5"), err=(1.5, 2.0))
        expect("folders, a value differs", run("--results", p("A"), p("B")), 1)
        os.remove(p("B/run1/results.h5"))
        expect("folders, a file missing", run("--results", p("A"), p("B")), 1)
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("compare_exports: 10 cases as expected")


if __name__ == "__main__":
    main()
