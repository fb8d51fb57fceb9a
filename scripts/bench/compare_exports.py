#!/usr/bin/python3
"""Bit-for-bit comparison of `iclab bench --export` files or of run results (issue 23: a change claimed bit-identical).

    scripts/bench/compare_exports.py DIR_A DIR_B     every *.h5 under DIR_A (recursively) against the file of that
                                                     relative path under DIR_B
    scripts/bench/compare_exports.py A.h5 B.h5
    scripts/bench/compare_exports.py --results ...   run folders (results.h5, checkpoint.h5, ...): also ignore what
                                                     measures the moment rather than the numbers (see TIMING_*)
    scripts/bench/compare_exports.py --any-blas ...  also ignore which OpenBLAS kernel ran (blas_core, blas_config):
                                                     the same build run under two OPENBLAS_CORETYPE values

Per file pair: the same dataset names, every dataset equal as bytes (dtype, shape and data), and the root attributes
equal apart from the ones that name the build or the moment (created_utc, git_commit, git_dirty, simd: the vector set
the build targets, which changes no bit of iclab's kernels, so that an AVX2 and an AVX-512 build compare equal). Prints one line per
pair; exit status 1 when any pair differs (or a file is missing), 0 when all are equal, 2 for bad arguments (a usage
line: an unknown option, not two paths, a path that does not exist, a folder beside a file).
"""
import os
import re
import sys

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import usage_error  # noqa: E402

USAGE = "usage: compare_exports.py [--results] [--any-blas] A B   (two .h5 files or two folders)"

IGNORED_ATTRS = {"created_utc", "git_commit", "git_dirty", "simd"}
# --results: a run's clock readings (wall times, rates) and the host it ran on differ from run to run by nature.
# A dataset or attribute is a clock reading when one of the words of its name (split at "_") is a unit of time or a
# rate or size of the moment: elapsed_s, init_s_fp32, conversion_ms_per_prompt, iclaa_seconds, peak_rss_gib, speedup.
# A checkpoint's trainer_state_checksum covers its elapsed time; omp_threads and blas_threads are the launcher's
# choice on a loaded machine (results do not depend on them: tests/test_threads*). Claims on timings (their metric
# names a time or a speedup, e.g. 000-7 "adapter is faster") are left out row by row from claims/* and claim_values/*.
# scripts/fingerprints/fingerprint.py hashes results under this same rule.
TIMING_ATTRS = {"start_time", "end_time", "written_time", "hostname", "compiler", "omp_threads", "blas_threads",
                "trainer_state_checksum"}
TIMING_WORDS = {"s", "ms", "us", "ns", "seconds", "elapsed", "wall", "time", "speedup", "rss", "gib", "gflops", "gflop"}
TIMING_CLAIM = re.compile(r"\b(time|times|seconds|speedup|faster)\b")


def is_timing(name):
    return bool(TIMING_WORDS & set(name.split("_")))  # case kept: S_over_T is a matrix name, not seconds


def timing_claim_rows(f):
    """{dataset group: boolean mask of rows to keep} for the claims tables of a results file."""
    if "claims/metric" not in f or "claims/id" not in f:
        return {}
    metric = [m.decode() if isinstance(m, bytes) else str(m) for m in f["claims/metric"][()]]
    ids = list(f["claims/id"][()])
    timing_ids = {i for i, m in zip(ids, metric) if TIMING_CLAIM.search(m)}
    masks = {"claims": [i not in timing_ids for i in ids]}
    if "claim_values/id" in f:
        masks["claim_values"] = [i not in timing_ids for i in f["claim_values/id"][()]]
    return masks


def datasets(f):
    found = {}
    f.visititems(lambda name, obj: found.__setitem__(name, obj) if isinstance(obj, h5py.Dataset) else None)
    return found


BLAS_ATTRS = {"blas_core", "blas_config"}


def compare(path_a, path_b, results=False, any_blas=False):
    """(number of datasets compared, list of differences: empty when equal)."""
    if not os.path.exists(path_b):
        return 0, [f"missing {path_b}"]
    problems = []
    with h5py.File(path_a, "r") as a, h5py.File(path_b, "r") as b:
        da, db = datasets(a), datasets(b)
        masks_a, masks_b = (timing_claim_rows(a), timing_claim_rows(b)) if results else ({}, {})
        if results:
            da = {n: d for n, d in da.items() if not is_timing(n.rsplit("/", 1)[-1])}
            db = {n: d for n, d in db.items() if not is_timing(n.rsplit("/", 1)[-1])}
        for name in sorted(set(da) ^ set(db)):
            problems.append(f"dataset {name} only in {'A' if name in da else 'B'}")
        for name in sorted(set(da) & set(db)):
            x, y = da[name][()], db[name][()]
            group = name.split("/", 1)[0]
            if group in masks_a and group in masks_b and len(masks_a[group]) == len(x) and len(masks_b[group]) == len(y):
                x, y = x[masks_a[group]], y[masks_b[group]]
            same = getattr(x, "dtype", None) == getattr(y, "dtype", None) and getattr(x, "shape", None) == getattr(y, "shape", None)
            if same and getattr(x, "dtype", None) is not None and x.dtype.kind == "O":  # strings: compare the values
                same = x.tolist() == y.tolist()
            else:
                same = same and (x.tobytes() == y.tobytes() if hasattr(x, "tobytes") else x == y)
            if not same:
                problems.append(f"dataset {name} differs")
        ignored = IGNORED_ATTRS | (TIMING_ATTRS if results else set()) | (BLAS_ATTRS if any_blas else set())
        keep = (lambda k: k not in ignored and not is_timing(k)) if results else (lambda k: k not in ignored)
        attrs_a = {k: a.attrs[k] for k in a.attrs if keep(k)}
        attrs_b = {k: b.attrs[k] for k in b.attrs if keep(k)}
        for key in sorted(set(attrs_a) | set(attrs_b)):
            if key not in attrs_a or key not in attrs_b or str(attrs_a[key]) != str(attrs_b[key]):
                problems.append(f"attribute {key} differs")
    return len(da), problems


def main():
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        sys.exit(0)
    results, any_blas = "--results" in args, "--any-blas" in args
    args = [a for a in args if a not in ("--results", "--any-blas")]
    for arg in args:
        if arg.startswith("-"):
            usage_error(USAGE, f"unknown option {arg}")
    if len(args) != 2:
        usage_error(USAGE, f"expected two paths, got {len(args)}")
    first, second = args
    for path in args:
        if not os.path.exists(path):
            usage_error(USAGE, f"no file or folder {path}")
    if os.path.isdir(first) != os.path.isdir(second):
        usage_error(USAGE, f"{first} and {second}: one is a folder, the other is not")
    if os.path.isdir(first):
        pairs = []
        for root, _, names in sorted(os.walk(first)):
            for n in sorted(names):
                if n.endswith(".h5"):
                    rel = os.path.relpath(os.path.join(root, n), first)
                    pairs.append((os.path.join(first, rel), os.path.join(second, rel)))
    else:
        pairs = [(first, second)]
    if not pairs:
        sys.exit(f"no .h5 files in {first}")
    failed = 0
    for path_a, path_b in pairs:
        count, problems = compare(path_a, path_b, results, any_blas)
        name = os.path.relpath(path_a, first) if os.path.isdir(first) else os.path.basename(path_a)
        if not problems:
            print(f"equal   {name} ({count} datasets)")
        else:
            failed += 1
            print(f"DIFFER  {name}: " + "; ".join(problems[:8]) + (" ..." if len(problems) > 8 else ""))
    print(f"{len(pairs) - failed} of {len(pairs)} file pairs equal")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
