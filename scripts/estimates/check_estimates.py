#!/usr/bin/python3
"""Every experiment's estimate (Experiment::estimate, framework/run/memory_estimate.hpp) against a short run of it
(issue 44; ctest `estimates`; docs/testing.md, Estimates):

    check_estimates.py ICLAB [--only FAMILY,...] [--work DIR] [--report]

Runs the `iclab run` families of scripts/fingerprints/runs.txt (their short configs; tokenize and prefix_vs_causal too
where a family uses their output) and the larger-memory runs of MEMORY_RUNS below, each on one thread with
ICLAB_COUNT_WORK=1 (experiments/cli/work_count.hpp), which makes iclab print the GEMM arithmetic it counted, the
estimate and the process's peak resident set. For each run:
  - counted GEMM FLOP within [0.5, 2] x the estimate's gemm_flops (the unweighted arithmetic of the products through
    nn::gemm). A family whose estimate has no GEMM part (gemm_flops 0: GEMMs are a minor part of its work by design,
    UNCOUNTED below) is held only to the next bound;
  - counted GEMM FLOP at most 2 x the estimate's flops (the GEMMs are part of the whole work);
  - peak RSS at most 2 x the memory estimate + the process baseline. The baseline is measured here: the peak RSS of
    the tiniest training run (BASELINE_RUN: ~25 MiB on this machine, the libraries and the run machinery), times
    BASELINE_MARGIN for the allocations no estimate counts (the results writer's buffers, the config, the logs; the
    short runs with memory estimates under 2 MiB peak at 21-29 MiB).
Counted work does not depend on the machine's load: no timing is asserted. --report prints the table and exits 0.
--only: these families (and the ones they use). --work: where the runs go (default a temporary folder, removed).
Exit status: 0 every estimate holds; 1 one does not, or a run failed; 2 bad arguments.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "fingerprints"))
from script_io import usage_error  # noqa: E402
import run_fingerprints  # noqa: E402

USAGE = "usage: check_estimates.py ICLAB [--only FAMILY,...] [--work DIR] [--report]"
RUNS = os.path.join(SOURCE, "scripts", "fingerprints", "runs.txt")
LOW, HIGH = 0.5, 2.0
BASELINE_MARGIN = 1.25
MIB = 1024.0 * 1024.0
# The tiniest training run: its peak RSS is the process baseline.
BASELINE_RUN = ["configs/quick/regression.yaml", "task.x_dim=1", "task.examples=2", "model.layers=1", "model.width=8",
                "model.heads=1", "train.steps=1", "eval.every=1", "eval.sequences=1", "train.batch_size=1"]
# Runs whose memory estimate is well above the baseline (the short runs of runs.txt hold a few MiB), one step or pass
# each: the training activations (estimate_training_memory), a forward pass (inference_memory_gib) and an lm run.
MEMORY_RUNS = [
    ("memory_training", ["configs/quick/induction_head.yaml", "train.steps=1", "train.warmup_steps=0", "eval.every=1",
                         "eval.sequences=4", "train.batch_size=32", "task.seq_len=256", "model.width=64", "model.heads=4"]),
    ("memory_forward", ["configs/paper/forward_1.98b.yaml", "model.layers=4", "model.width=512", "model.heads=8",
                        "task.seq_len=256", "task.batch_size=4", "task.repeats=1"]),
]
WORK_LINE = re.compile(r"^iclab work: (.*)$", re.M)


def parse_args(argv):
    opts = {"iclab": None, "only": None, "work": None, "report": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--only", "--work"):
            if i + 1 >= len(argv) or not argv[i + 1]:
                usage_error(USAGE, f"{a} needs a value")
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a == "--report":
            opts["report"] = True
        elif a.startswith("-"):
            usage_error(USAGE, f"unknown option {a}")
        elif opts["iclab"] is None:
            opts["iclab"] = a
        else:
            usage_error(USAGE, f"unexpected argument {a}")
        i += 1
    if opts["iclab"] is None:
        usage_error(USAGE, "missing ICLAB (the iclab executable)")
    if not (os.path.isfile(opts["iclab"]) and os.access(opts["iclab"], os.X_OK)):
        usage_error(USAGE, f"{opts['iclab']} is not an executable")
    if opts["work"] is not None and os.path.exists(opts["work"]) and os.listdir(opts["work"]):
        usage_error(USAGE, f"--work {opts['work']} exists and is not empty")
    return opts


def run_counted(iclab, words, name, work):
    """Runs `iclab run WORDS` counted; returns the fields of its work line (floats), or None with the error printed."""
    command = [iclab, "run"] + words + [f"output.dir={os.path.join(work, 'out')}", f"output.name={name}", "--quiet",
                                        "--threads", "1"]
    env = dict(os.environ, ICLAB_COUNT_WORK="1", OMP_NUM_THREADS="1")
    done = subprocess.run(command, cwd=SOURCE, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                          timeout=600)
    found = WORK_LINE.findall(done.stderr)
    if done.returncode != 0 or not found:
        tail = "\n    ".join(done.stderr.strip().splitlines()[-5:])
        print(f"check_estimates: {name}: iclab run exited {done.returncode}:\n    {tail}", file=sys.stderr)
        return None
    return {k: float(v) for k, v in (field.split("=", 1) for field in found[-1].split())}


def main():
    opts = parse_args(sys.argv[1:])
    runs = run_fingerprints.read_runs(RUNS)
    if opts["only"] is not None:
        known = {name for name, _ in runs} | {name for name, _ in MEMORY_RUNS}
        for name in opts["only"].split(","):
            if name not in known:
                usage_error(USAGE, f"--only: no family {name}")
    wanted = None if opts["only"] is None else set(opts["only"].split(","))
    if wanted is None:
        families = run_fingerprints.needed(runs, None)
    else:  # the families named and the ones whose output they use (tokenize, prefix_vs_causal)
        named = sorted(wanted & set(dict(runs)))
        families = run_fingerprints.needed(runs, ",".join(named)) if named else []
    work = opts["work"] or tempfile.mkdtemp(prefix="iclab_estimates_")
    os.makedirs(work, exist_ok=True)
    failures, rows = [], []

    baseline = run_counted(opts["iclab"], BASELINE_RUN, "baseline", work)
    if baseline is None:
        print("check_estimates: the baseline run failed", file=sys.stderr)
        return 1
    allowance = BASELINE_MARGIN * baseline["peak_rss_gib"]

    measured = []  # (name, fields, checked)
    commands = dict(runs)
    for family in families:
        for number, command in commands[family]:
            if command[0] != "run" and family != "tokenize":
                break  # the lm commands (export, generate, ...): tests/test_lm_estimates.cpp
            out = os.path.join(work, "out", family)
            places = {"out": out, "tmp": os.path.join(work, "tmp", family),
                      "data": os.path.join(SOURCE, "tests", "data", "fingerprints")}
            os.makedirs(places["tmp"], exist_ok=True)
            words = [re.sub(r"\{([^}]*)\}", lambda m: places.get(m.group(1)) or os.path.join(work, "out", m.group(1)), w)
                     for w in command]
            if command[0] != "run":  # tokenize: an input of the lm families, not checked
                os.makedirs(out, exist_ok=True)
                done = subprocess.run([opts["iclab"]] + words, cwd=SOURCE, capture_output=True, text=True,
                                      stdin=subprocess.DEVNULL, timeout=600)
                if done.returncode != 0:
                    failures.append(f"{family}: runs.txt line {number} exited {done.returncode}")
                continue
            fields = run_counted(opts["iclab"], words[1:], family, work)
            if fields is None:
                failures.append(f"{family}: the run failed")
                continue
            measured.append((family, fields, wanted is None or family in wanted))
    for name, words in MEMORY_RUNS:
        if wanted is not None and name not in wanted:
            continue
        fields = run_counted(opts["iclab"], words, name, work)
        if fields is None:
            failures.append(f"{name}: the run failed")
            continue
        measured.append((name, fields, True))

    print(f"baseline: peak RSS {baseline['peak_rss_gib'] * 1024:.1f} MiB of the tiniest run; allowance "
          f"{allowance * 1024:.1f} MiB (x{BASELINE_MARGIN})")
    print(f"{'family':24s} {'GEMM counted':>12s} {'estimate':>10s} {'ratio':>7s} {'all work':>10s} "
          f"{'RSS MiB':>8s} {'est. MiB':>9s} {'bound':>8s}")
    for name, f, checked in measured:
        counted, gemm, work_all = f["gemm_flops"], f["estimate_gemm_flops"], f["estimate_flops"]
        rss, est_gib = f["peak_rss_gib"], f["estimate_gib"]
        bound = 2.0 * est_gib + allowance
        ratio = counted / gemm if gemm > 0 else float("nan")
        print(f"{name:24s} {counted:12.3g} {gemm:10.3g} {('%.3f' % ratio) if gemm > 0 else 'UNCOUNTED':>7s} "
              f"{work_all:10.3g} {rss * 1024:8.1f} {est_gib * 1024:9.2f} {bound * 1024:8.1f}")
        if not checked:
            continue
        if gemm > 0 and not LOW <= ratio <= HIGH:
            failures.append(f"{name}: counted GEMM work {counted:.3g} FLOP is {ratio:.3g} x the estimate's {gemm:.3g} "
                            f"(allowed [{LOW}, {HIGH}])")
        if counted > HIGH * work_all:
            failures.append(f"{name}: counted GEMM work {counted:.3g} FLOP exceeds {HIGH} x the whole estimate "
                            f"{work_all:.3g}")
        if rss > bound:
            failures.append(f"{name}: peak RSS {rss * 1024:.1f} MiB exceeds 2 x the estimate {est_gib * 1024:.2f} MiB "
                            f"+ the baseline {allowance * 1024:.1f} MiB")
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    if opts["work"] is None and not failures:
        shutil.rmtree(work, ignore_errors=True)
    elif failures:
        print(f"check_estimates: the runs are kept in {work}", file=sys.stderr)
    if opts["report"]:
        return 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
