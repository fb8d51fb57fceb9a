#!/usr/bin/python3
"""ctest fingerprints_detect: the fingerprint check catches one ulp (in a results file, and from a one-ulp change in one
loop of the code: train.perturb_init_ulps=1) and ignores only clocks (issue 46).

    test_fingerprints.py BUILD_DIR

On two tiny families (a tokenizer run and a 2-step induction-head run) made by this build: --update then a check
pass; the run folder with the last bit of one float flipped fails `fingerprint.py --check`, naming the dataset, and
`--compare` names its element and both values' bits; clock readings (elapsed_s, tokens_per_s, wall_time_s, hostname,
start_time) changed pass; a new dataset fails; a committed file whose dataset hash belongs to another machine fails
`scripts/fingerprints.sh` naming the family and that dataset; a hand-edited file and bad arguments exit 2.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from fingerprint import combined, format_fingerprints, read_fingerprints  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), file=sys.stderr if not ok else sys.stdout)
    if not ok:
        failures.append(name)


def run(argv):
    return subprocess.run(argv, cwd=SOURCE, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def driver(*args):
    return run([os.path.join(SOURCE, "scripts", "fingerprints.sh"), "--build", BUILD] + list(args))


def tool(*args):
    return run(["/usr/bin/python3", os.path.join(HERE, "fingerprint.py")] + list(args))


RUNS = """\
tokenize        tokenize --tokenizer {data}/tokenizer --out {out}/tokens.h5 --train {data}/train.txt --heldout {data}/heldout.txt
induction_head  run configs/quick/induction_head.yaml train.steps=2 train.warmup_steps=1 eval.every=2 task.seq_len=16 eval.sequences=8 train.batch_size=4
"""
TARGET = "/checkpoint/blocks.0.attn.w_qkv"


def flip_last_bit(path, dataset, index):
    """One ulp: the lowest mantissa bit of one float of one dataset, rewritten in place (a copy of a run)."""
    with h5py.File(path, "r+") as f:
        values = f[dataset][()]
        flat = values.reshape(-1).view(np.uint32 if values.dtype == np.float32 else np.uint64)
        flat[index] ^= 1
        f[dataset][...] = values
        return values.reshape(-1)[index]


def main():
    scratch = tempfile.mkdtemp(prefix="iclab_fingerprints_test_")
    try:
        runs, file, work = (os.path.join(scratch, n) for n in ("runs.txt", "fingerprints.txt", "work"))
        with open(runs, "w") as f:
            f.write(RUNS)
        made = driver("--update", "--runs", runs, "--file", file, "--work", work)
        check("--update writes the file", made.returncode == 0 and os.path.isfile(file), made.stderr[-800:])
        if made.returncode != 0:
            return
        families = read_fingerprints(file)
        check("two families", list(families) == ["tokenize", "induction_head"], list(families))
        again = driver("--runs", runs, "--file", file, "--work", work)
        check("a second run of the same build matches", again.returncode == 0 and "all 2 families equal" in again.stdout,
              again.stdout[-400:] + again.stderr[-800:])

        # One ulp in one loop of the code: train.perturb_init_ulps=1 moves every trained initial parameter by one
        # ulp (framework/train/perturb.hpp) and nothing else; the same build's fingerprints must then differ.
        perturbed_runs = os.path.join(scratch, "perturbed_runs.txt")
        with open(perturbed_runs, "w") as f:
            f.write("".join(line + " train.perturb_init_ulps=1\n" if line.startswith("induction_head") else line + "\n"
                            for line in RUNS.splitlines()))
        perturbed = driver("--runs", perturbed_runs, "--file", file, "--work", os.path.join(scratch, "perturbed_work"))
        check("a one-ulp change of the initial parameters fails the check", perturbed.returncode == 1,
              perturbed.stdout[-400:] + perturbed.stderr[-800:])
        check("... naming the family and its first differing dataset",
              "induction_head: " in perturbed.stderr and " first " in perturbed.stderr and "tokenize:" not in perturbed.stderr,
              perturbed.stderr[-800:])

        run_dir = os.path.join(work, "out", "induction_head")
        reference = os.path.join(scratch, "reference")
        shutil.copytree(run_dir, reference)
        same = tool("--check", file, "induction_head", reference)
        check("the run folder itself passes --check", same.returncode == 0, same.stdout + same.stderr)

        flipped = os.path.join(scratch, "flipped")
        shutil.copytree(run_dir, flipped)
        flip_last_bit(os.path.join(flipped, "results.h5"), TARGET, 5)
        one_ulp = tool("--check", file, "induction_head", flipped)
        check("one ulp in one float fails --check", one_ulp.returncode == 1, one_ulp.stdout + one_ulp.stderr)
        check("... naming that dataset first", f"first results.h5:{TARGET} (float32" in one_ulp.stdout, one_ulp.stdout)
        check("... and only it", "1 of " in one_ulp.stdout, one_ulp.stdout)
        compared = tool("--compare", reference, flipped)
        check("--compare finds it", compared.returncode == 1 and f"results.h5:{TARGET}" in compared.stdout, compared.stdout)
        check("--compare names the element and both values' bits",
              "element (0, 5):" in compared.stdout and "(1 of " in compared.stdout and "0x" in compared.stdout,
              compared.stdout)

        clocks = os.path.join(scratch, "clocks")
        shutil.copytree(run_dir, clocks)
        with h5py.File(os.path.join(clocks, "results.h5"), "r+") as f:
            for name in ("curves/elapsed_s", "curves/tokens_per_s"):
                f[name][...] = f[name][()] * 3.0 + 1.0
            f.attrs["wall_time_s"] = 12345.0
            f.attrs["hostname"] = "another-machine"
            f.attrs["start_time"] = "1999-01-01T00:00:00Z"
        clocks_only = tool("--check", file, "induction_head", clocks)
        check("changed clock readings and host pass", clocks_only.returncode == 0, clocks_only.stdout + clocks_only.stderr)

        added = os.path.join(scratch, "added")
        shutil.copytree(run_dir, added)
        with h5py.File(os.path.join(added, "results.h5"), "r+") as f:
            f["tables/extra"] = np.zeros(3)
        new = tool("--check", file, "induction_head", added)
        check("a new dataset fails", new.returncode == 1 and "results.h5:/tables/extra (float64 3) is new" in new.stdout,
              new.stdout)

        # The committed file of a machine whose /steps/loss differs: the driver fails naming family and dataset.
        families = read_fingerprints(file)
        fingerprint, entries = families["induction_head"]
        entries["results.h5:/steps/loss"].digest = "0123456789abcdef"
        families["induction_head"] = (combined(entries), entries)
        other = os.path.join(scratch, "other_machine.txt")
        with open(other, "w") as f:
            f.write(format_fingerprints(families))
        differs = driver("--runs", runs, "--file", other, "--work", work)
        check("the driver fails on another machine's bits", differs.returncode == 1, differs.stdout + differs.stderr)
        check("... naming the family and the dataset",
              "induction_head: 1 of" in differs.stderr and "first results.h5:/steps/loss (float64 2): committed 0123456789abcdef"
              in differs.stderr, differs.stderr)
        check("... and keeping the outputs", f"outputs kept in {work}/out" in differs.stderr, differs.stderr)

        with open(file) as f:
            text = f.read()
        edited = os.path.join(scratch, "edited.txt")
        with open(edited, "w") as f:
            f.write(text.replace(entries["results.h5:/steps/lr"].digest, "fedcba9876543210", 1))
        hand = driver("--runs", runs, "--file", edited, "--work", work)
        check("a hand-edited file is refused (exit 2)", hand.returncode == 2 and "do not give its fingerprint" in hand.stderr,
              hand.stderr[-400:])

        foreign = os.path.join(scratch, "foreign")
        os.makedirs(foreign)
        open(os.path.join(foreign, "keep.txt"), "w").close()
        bad_runs = os.path.join(scratch, "bad_runs.txt")
        with open(bad_runs, "w") as f:
            f.write("lm  run configs/quick/lm_kjv.yaml data.tokens={tokenize}/tokens.h5\n")
        for name, args in [("an unknown option", ["--fast"]), ("a missing value", ["--work"]),
                           ("a foreign --work folder", ["--runs", runs, "--file", file, "--work", foreign]),
                           ("an unknown family", ["--runs", runs, "--file", file, "--only", "nope"]),
                           ("a placeholder of no earlier family", ["--runs", bad_runs, "--file", file, "--update"])]:
            before = sorted(os.listdir(scratch))
            refused = driver(*args)
            check(f"{name} is refused (exit 2, usage)", refused.returncode == 2 and "usage" in refused.stderr,
                  f"exit {refused.returncode}: {refused.stderr[-300:]}")
            check(f"{name}: nothing written", sorted(os.listdir(scratch)) == before and os.listdir(foreign) == ["keep.txt"])
        check("the committed file is untouched", open(file).read() == text)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


main()
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
