#!/usr/bin/python3
"""Fingerprints of results: one hash per dataset of a run's HDF5 files, and one per run (issue 46: the same bits on
every x86-64 CPU, checked by CI through scripts/fingerprints.sh and the committed tests/data/fingerprints.txt).

    scripts/fingerprints/fingerprint.py PATH...      per-dataset hashes and the combined fingerprint of each PATH
                                                     (a run folder or any folder: every .h5 under it; or one .h5)
    scripts/fingerprints/fingerprint.py --compare A B   the same two paths element by element: the first dataset that
                                                     differs, its first differing element and both values (bits)
    scripts/fingerprints/fingerprint.py --check FILE FAMILY PATH   PATH's fingerprint against FAMILY's in a
                                                     fingerprints file (tests/data/fingerprints.txt), as ctest
                                                     fingerprints compares: the first differing dataset named

What is hashed (one rule, shared with scripts/bench/compare_exports.py --results, which defines it): every dataset
(its name, dtype, shape and the bytes of its values; strings as UTF-8) and every numeric root attribute, except what
measures the moment rather than the numbers: a dataset or attribute one of whose "_"-separated words is a unit of
time, a rate or a size of the moment (compare_exports.is_timing: elapsed_s, tokens_per_s, wall_s_fp32, peak_rss_gib,
speedup, ...), the attributes compare_exports.TIMING_ATTRS and IGNORED_ATTRS name, and the rows of /claims and
/claim_values whose metric is a time (compare_exports.timing_claim_rows). String attributes are never hashed: they
hold the resolved config (with its paths), the host, the commit, the compiler and times.
Exit status: 0; 1 when --compare or --check finds a difference; 2 for bad arguments.
"""
import hashlib
import os
import signal
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from script_io import usage_error  # noqa: E402
from compare_exports import IGNORED_ATTRS, TIMING_ATTRS, is_timing, timing_claim_rows  # noqa: E402

USAGE = "usage: fingerprint.py PATH... | fingerprint.py --compare A B | fingerprint.py --check FILE FAMILY PATH"
DIGITS = 16  # hex digits kept of each SHA-256: 64 bits, collisions are not the risk here


class Entry:
    """One hashed item of a file: a dataset (name starts with '/') or a numeric root attribute ('@name')."""

    def __init__(self, name, dtype, shape, digest, values=None):
        self.name, self.dtype, self.shape, self.digest, self.values = name, dtype, shape, digest, values

    def key(self):
        return f"{self.dtype}\t{self.shape}\t{self.digest}"


def shape_text(shape):
    return "x".join(str(n) for n in shape) if shape else "scalar"


def canonical_bytes(values):
    """The bytes hashed for an array: strings as length-prefixed UTF-8, anything else as its bytes in C order."""
    if values.dtype.kind in "OSU":
        parts = []
        for v in values.reshape(-1).tolist():
            b = v if isinstance(v, bytes) else str(v).encode("utf-8")
            parts.append(len(b).to_bytes(8, "little") + b)
        return b"".join(parts)
    return np.ascontiguousarray(values).tobytes()


def dtype_text(values):
    if values.dtype.kind in "OSU":
        return "string"
    return values.dtype.name if values.dtype.fields is None else str(values.dtype.descr)


def hash_array(values):
    h = hashlib.sha256()
    h.update(f"{dtype_text(values)}|{values.dtype.str}|{values.shape}|".encode())
    h.update(canonical_bytes(values))
    return h.hexdigest()[:DIGITS]


def kept(name):
    return not is_timing(name.rsplit("/", 1)[-1])


def file_entries(path, keep_values=False):
    """{name: Entry} of one HDF5 file under the rule above."""
    entries = {}
    with h5py.File(path, "r") as f:
        masks = timing_claim_rows(f)
        found = []
        f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
        for name in found:
            if not kept(name):
                continue
            values = np.asarray(f[name][()])
            group = name.split("/", 1)[0]
            if group in masks and values.ndim == 1 and len(masks[group]) == len(values):
                values = values[np.asarray(masks[group], dtype=bool)]
            entries["/" + name] = Entry("/" + name, dtype_text(values), shape_text(values.shape), hash_array(values),
                                        values if keep_values else None)
        for key in f.attrs:
            if key in IGNORED_ATTRS or key in TIMING_ATTRS or is_timing(key):
                continue
            values = np.asarray(f.attrs[key])
            if values.dtype.kind not in "biuf":  # strings: config text, paths, host, commit, times
                continue
            entries["@" + key] = Entry("@" + key, dtype_text(values), shape_text(values.shape), hash_array(values),
                                       values if keep_values else None)
    return entries


def h5_files(path):
    """The .h5 files a path stands for, as (name relative to the path, full path), sorted."""
    if os.path.isfile(path):
        return [(os.path.basename(path), path)]
    found = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for n in sorted(names):
            if n.endswith(".h5"):
                full = os.path.join(root, n)
                found.append((os.path.relpath(full, path), full))
    return sorted(found)


def path_entries(path, keep_values=False):
    """{"file.h5:/dataset" or "file.h5:@attribute": Entry} over every .h5 file a path stands for."""
    entries = {}
    for rel, full in h5_files(path):
        for name, e in file_entries(full, keep_values).items():
            entries[f"{rel}:{name}"] = e
    return entries


def combined(entries):
    """One fingerprint over every entry: its name, dtype, shape and hash, in name order."""
    h = hashlib.sha256()
    for name in sorted(entries):
        h.update(f"{name}\t{entries[name].key()}\n".encode())
    return h.hexdigest()[:DIGITS]


def bits(value, dtype):
    """A float's bits in hex (to show a one-ulp difference), or the value itself."""
    if dtype.kind == "f":
        return f"{value!r} (0x{np.asarray(value, dtype=dtype).view(f'u{dtype.itemsize}').item():0{2 * dtype.itemsize}x})"
    return repr(value)


def first_element_difference(a, b):
    """'element I: VALUE_A vs VALUE_B' for the first differing element of two arrays of one shape, or a reason."""
    if a.dtype.kind in "OSU" or b.dtype.kind in "OSU":
        la, lb = a.reshape(-1).tolist(), b.reshape(-1).tolist()
        for i, (x, y) in enumerate(zip(la, lb)):
            if x != y:
                return f"element {np.unravel_index(i, a.shape) if a.ndim > 1 else i}: {x!r} vs {y!r}"
        return "strings differ in length" if len(la) != len(lb) else "equal"
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype} {a.shape} vs {b.dtype} {b.shape}"
    fa, fb = a.reshape(-1), b.reshape(-1)
    width = f"u{a.dtype.itemsize}" if a.dtype.kind in "fiub" and a.dtype.fields is None else None
    if width is None:
        diff = [i for i in range(len(fa)) if fa[i].tobytes() != fb[i].tobytes()]
    else:
        diff = np.flatnonzero(fa.view(width) != fb.view(width))
    if len(diff) == 0:
        return "equal"
    i = int(diff[0])
    where = tuple(int(k) for k in np.unravel_index(i, a.shape)) if a.ndim > 1 else i
    return f"element {where}: {bits(fa[i], a.dtype)} vs {bits(fb[i], b.dtype)} ({len(diff)} of {fa.size} elements differ)"


def compare_paths(path_a, path_b):
    """Lines describing every difference between two paths' entries (empty when equal), first difference first."""
    a, b = path_entries(path_a, keep_values=True), path_entries(path_b, keep_values=True)
    lines = []
    for name in sorted(set(a) | set(b), key=report_order):
        if name not in b or name not in a:
            lines.append(f"{name}: only in {path_a if name in a else path_b}")
        elif a[name].key() != b[name].key():
            x, y = a[name], b[name]
            lines.append(f"{name} ({x.dtype} {x.shape} vs {y.dtype} {y.shape}): {first_element_difference(x.values, y.values)}")
    return lines


HEADER = """\
# Fingerprints of a short run of every experiment family (scripts/fingerprints/runs.txt): per family one line
# "family NAME FINGERPRINT ENTRIES", then one line per dataset or numeric root attribute: family, file:name, dtype,
# shape, hash (scripts/fingerprints/fingerprint.py says what is hashed and what is left out: clock readings).
# ctest fingerprints recomputes them and compares bit for bit. Written by scripts/fingerprints.sh --update only.
"""


def read_fingerprints(path, usage=USAGE):
    """{family: (fingerprint, {name: Entry})} of a fingerprints file."""
    families = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "family" and len(fields) == 4:
                families[fields[1]] = (fields[2], {})
            elif len(fields) == 5 and fields[0] in families:
                families[fields[0]][1][fields[1]] = Entry(fields[1], fields[2], fields[3], fields[4])
            else:
                usage_error(usage, f"{path}:{number}: not a fingerprint line (regenerate the file with --update)")
    for family, (fingerprint, entries) in families.items():
        if combined(entries) != fingerprint:  # a line edited by hand, or a merge that mixed two versions
            usage_error(usage, f"{path}: the lines of {family} do not give its fingerprint {fingerprint} (regenerate "
                               "the file with scripts/fingerprints.sh --update)")
    return families


def format_fingerprints(families):
    """The text of a fingerprints file: {family: (fingerprint, {name: Entry})}, families in the given order."""
    lines = [HEADER]
    for family, (fingerprint, entries) in families.items():
        lines.append(f"family\t{family}\t{fingerprint}\t{len(entries)}\n")
        for name in sorted(entries):
            e = entries[name]
            lines.append(f"{family}\t{name}\t{e.dtype}\t{e.shape}\t{e.digest}\n")
    return "".join(lines)


def describe(name, committed, computed):
    if name not in computed:
        return f"{name} ({committed[name].dtype} {committed[name].shape}) is no longer written"
    if name not in committed:
        return f"{name} ({computed[name].dtype} {computed[name].shape}) is new"
    a, b = committed[name], computed[name]
    if (a.dtype, a.shape) != (b.dtype, b.shape):
        return f"{name}: {a.dtype} {a.shape} committed, {b.dtype} {b.shape} computed"
    return f"{name} ({a.dtype} {a.shape}): committed {a.digest}, computed {b.digest}"


def report_order(name):
    """The order differences are named in: results.h5 (what a run publishes) before the other files (a checkpoint
    repeats its parameters), then by name; the exit statuses of the commands last."""
    file = name.split(":", 1)[0]
    return (name.startswith("command "), file != "results.h5", name)


def differences(committed, computed, family, file):
    """None when (fingerprint, entries) `computed` equals `committed`; else one message naming the first entry (in
    report_order) that differs and how many do."""
    (old_fingerprint, old), (fingerprint, new) = committed, computed
    if old_fingerprint == fingerprint:
        return None
    differing = [n for n in sorted(set(old) | set(new), key=report_order)
                 if n not in old or n not in new or old[n].key() != new[n].key()]
    message = (f"{family}: {len(differing)} of {len(old)} datasets and attributes differ from {file}; "
               f"first {describe(differing[0], old, new)}")
    if len(differing) > 1:
        message += f"; also {', '.join(differing[1:4])}" + (" ..." if len(differing) > 4 else "")
    return message


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        sys.exit(0)
    compare, check = "--compare" in args, "--check" in args
    args = [a for a in args if a not in ("--compare", "--check")]
    for a in args:
        if a.startswith("-"):
            usage_error(USAGE, f"unknown option {a}")
    if compare and check:
        usage_error(USAGE, "--compare and --check exclude each other")
    if not args or (compare and len(args) != 2) or (check and len(args) != 3):
        usage_error(USAGE, "--compare takes two paths" if compare else "--check takes FILE FAMILY PATH" if check
                    else "expected at least one path")
    if check:
        file, family, path = args
        if not os.path.isfile(file):
            usage_error(USAGE, f"no fingerprints file {file}")
        committed = read_fingerprints(file)
        if family not in committed:
            usage_error(USAGE, f"no family {family} in {file}")
        args = [path]
    for p in args:
        if not os.path.exists(p):
            usage_error(USAGE, f"no file or folder {p}")
        if not h5_files(p):
            usage_error(USAGE, f"no .h5 file in {p}")
    if check:
        entries = path_entries(path)
        # the exit statuses of the family's commands (scripts/fingerprints.sh records them) are not in PATH
        old = {n: e for n, e in committed[family][1].items() if e.dtype != "exit"}
        message = differences((combined(old), old), (combined(entries), entries), family, file)
        print(message or f"{family}: {path} equal to {file} ({len(entries)} datasets and attributes)")
        sys.exit(1 if message else 0)
    if compare:
        lines = compare_paths(*args)
        for line in lines:
            print(line)
        print(f"{len(lines)} difference(s)" if lines else "equal")
        sys.exit(1 if lines else 0)
    for p in args:
        entries = path_entries(p)
        for name in sorted(entries):
            e = entries[name]
            print(f"{name}\t{e.dtype}\t{e.shape}\t{e.digest}")
        print(f"{p}: fingerprint {combined(entries)} over {len(entries)} datasets and attributes")


if __name__ == "__main__":
    main()
