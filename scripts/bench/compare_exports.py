#!/usr/bin/python3
"""Bit-for-bit comparison of `iclab bench --export` files (issue 23: a change claimed bit-identical).

    scripts/bench/compare_exports.py DIR_A DIR_B     every *.h5 of DIR_A against the file of that name in DIR_B
    scripts/bench/compare_exports.py A.h5 B.h5

Per file pair: the same dataset names, every dataset equal as bytes (dtype, shape and data), and the root attributes
equal apart from the ones that name the build or the moment (created_utc, git_commit, git_dirty). Prints one line per
pair; exit status 1 when any pair differs (or a file is missing), 0 when all are equal.
"""
import os
import sys

import h5py

IGNORED_ATTRS = {"created_utc", "git_commit", "git_dirty"}


def datasets(f):
    found = {}
    f.visititems(lambda name, obj: found.__setitem__(name, obj) if isinstance(obj, h5py.Dataset) else None)
    return found


def compare(path_a, path_b):
    """(number of datasets, list of differences: empty when equal)."""
    if not os.path.exists(path_b):
        return 0, [f"missing {path_b}"]
    problems = []
    with h5py.File(path_a, "r") as a, h5py.File(path_b, "r") as b:
        da, db = datasets(a), datasets(b)
        for name in sorted(set(da) ^ set(db)):
            problems.append(f"dataset {name} only in {'A' if name in da else 'B'}")
        for name in sorted(set(da) & set(db)):
            x, y = da[name][()], db[name][()]
            same = getattr(x, "dtype", None) == getattr(y, "dtype", None) and getattr(x, "shape", None) == getattr(y, "shape", None)
            same = same and (x.tobytes() == y.tobytes() if hasattr(x, "tobytes") else x == y)
            if not same:
                problems.append(f"dataset {name} differs")
        attrs_a = {k: a.attrs[k] for k in a.attrs if k not in IGNORED_ATTRS}
        attrs_b = {k: b.attrs[k] for k in b.attrs if k not in IGNORED_ATTRS}
        for key in sorted(set(attrs_a) | set(attrs_b)):
            if key not in attrs_a or key not in attrs_b or str(attrs_a[key]) != str(attrs_b[key]):
                problems.append(f"attribute {key} differs")
    return len(da), problems


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    first, second = sys.argv[1:]
    if os.path.isdir(first):
        pairs = [(os.path.join(first, n), os.path.join(second, n)) for n in sorted(os.listdir(first)) if n.endswith(".h5")]
    else:
        pairs = [(first, second)]
    if not pairs:
        sys.exit(f"no .h5 files in {first}")
    failed = 0
    for path_a, path_b in pairs:
        count, problems = compare(path_a, path_b)
        if not problems:
            print(f"equal   {os.path.basename(path_a)} ({count} datasets)")
        else:
            failed += 1
            print(f"DIFFER  {os.path.basename(path_a)}: " + "; ".join(problems[:8]) + (" ..." if len(problems) > 8 else ""))
    print(f"{len(pairs) - failed} of {len(pairs)} file pairs equal")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
