#!/usr/bin/python3
"""The cost of one call through `import iclab` (issue 42, docs/python.md "Cost"): `import iclab`, Model.logits on a
small input against the same forward timed inside C++, and against `iclab predict` as a subprocess.

    PYTHONPATH=build/python scripts/bench/python_overhead.py RUN_DIR [--tokens T] [--iters N]

RUN_DIR: a finished run (e.g. the quick induction-head model). Prints medians; exit 2 on bad arguments.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import usage_error  # noqa: E402

USAGE = "usage: python_overhead.py RUN_DIR [--tokens T] [--iters N]"


def main(argv):
    if not argv or not os.path.isdir(argv[0]):
        usage_error(USAGE, "give a finished run folder")
    run_dir, tokens, iters = argv[0], 16, 200
    rest = argv[1:]
    while rest:
        if rest[0] in ("--tokens", "--iters") and len(rest) > 1 and rest[1].isdigit() and int(rest[1]) > 0:
            tokens, iters = (int(rest[1]), iters) if rest[0] == "--tokens" else (tokens, int(rest[1]))
            rest = rest[2:]
        else:
            usage_error(USAGE, f"bad argument {rest[0]}")
    start = time.perf_counter()
    import iclab
    import_s = time.perf_counter() - start
    import numpy as np
    model = iclab.Model(run_dir)
    ids = (np.arange(tokens, dtype=np.int32) * 7) % min(model.vocab, 52)
    for _ in range(10):
        model.logits(ids)  # warm-up
    python_s = []
    cpp_s = []
    for _ in range(5):  # interleaved rounds: the same machine load for both
        for _ in range(iters // 5):
            t = time.perf_counter()
            model.logits(ids)
            python_s.append(time.perf_counter() - t)
        cpp_s += model._engine.time_forward(ids, iters // 5)
    py_med, cpp_med = statistics.median(python_s), statistics.median(cpp_s)
    binary = iclab._iclab.binary
    cli_s = []
    with tempfile.TemporaryDirectory() as scratch:
        args = [binary, "predict", run_dir, "--tokens" if model.is_lm else "--text",
                ",".join(map(str, ids)) if model.is_lm else iclab._iclab.decode_letters([int(i) for i in ids]),
                "--out", os.path.join(scratch, "p.h5"), "--overwrite", "--top", "0"]
        for _ in range(10):
            t = time.perf_counter()
            subprocess.run(args, check=True, capture_output=True)
            cli_s.append(time.perf_counter() - t)
    cli_med = statistics.median(cli_s)
    print(f"model {run_dir} ({model.parameter_count} parameters, {model.dtype}), T = {tokens}, B = 1")
    print(f"import iclab                     {import_s * 1e3:9.1f} ms")
    print(f"C++ forward (timed in C++)       {cpp_med * 1e6:9.1f} us  median of {len(cpp_s)}")
    print(f"Model.logits (Python)            {py_med * 1e6:9.1f} us  median of {len(python_s)}  "
          f"({100 * (py_med / cpp_med - 1):+.1f} % over C++)")
    print(f"iclab predict --out (subprocess) {cli_med * 1e3:9.1f} ms  median of {len(cli_s)}  ({cli_med / py_med:.0f}x Model.logits)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
