#!/usr/bin/python3
"""Per training step: wall time of each kind of OpenMP parallel region and of the serial code between regions, from
traces written by region_trace.cpp (see there for the commands). Min and median over the steps of all traces given.

    /usr/bin/python3 scripts/bench/region_trace/region_trace.py BINARY TRACE [TRACE ...]

A step is the span from the first region after an optimizer region to the next optimizer region's end (iclab bench's
training step; the forward-only and counted passes of the bench are other spans and are left out by that rule only if
they contain no optimizer region, which holds for iclab bench). Region bodies are named with addr2line.
"""
import collections
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from script_io import positional, usage_error  # noqa: E402

USAGE = "usage: region_trace.py BINARY TRACE [TRACE ...]"


def short(name):
    name = name.split("(")[0].split("iclab::")[-1]
    for junk in ("<float>", "<double>", "nn::", "detail::", "void "):
        name = name.replace(junk, "")
    return name


def steps_of(binary, path):
    rows = [line.split() for line in open(path)]
    offsets = sorted({r[2] for r in rows})
    out = subprocess.run(["addr2line", "-f", "-C", "-e", binary] + ["0x" + o for o in offsets], capture_output=True,
                         text=True, check=True).stdout.split("\n")
    names = {o: short(out[2 * i]) for i, o in enumerate(offsets)}
    regions = [(float(s), float(e), names[o]) for s, e, o, _ in rows]
    starts = [i for i in range(1, len(regions)) if "Optimizer" not in regions[i][2] and "Optimizer" in regions[i - 1][2]]
    for a, b in zip(starts, starts[1:]):
        per = collections.defaultdict(float)
        for i in range(a, b):
            start, end, name = regions[i]
            per[name] += end - start
            per["serial code between regions"] += start - regions[i - 1][1]
        per["step"] = regions[b - 1][1] - regions[a - 1][1]
        per["regions per step"] = b - a
        yield per


def main():
    args = positional(sys.argv, USAGE, 2, 10_000, __doc__)
    binary, paths = args[0], args[1:]
    for path in args:
        if not os.path.isfile(path):
            usage_error(USAGE, f"no file {path}")
    steps = [s for p in paths for s in steps_of(binary, p)]
    if not steps:
        sys.exit("no training steps found (no optimizer regions in the traces?)")
    print("%d steps; us per step" % len(steps))
    for key in sorted(steps[0], key=lambda k: -steps[0][k]):
        values = sorted(s.get(key, 0.0) for s in steps)
        print("%-32s min %10.1f  median %10.1f" % (key, values[0], values[len(values) // 2]))


if __name__ == "__main__":
    main()
