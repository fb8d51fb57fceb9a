#!/usr/bin/python3
"""One fingerprint per run of a reproduction profile (issue 46: `scripts/reproduce.sh --check` compares values, not
only verdicts). The fingerprint of a run is fingerprint.py's over every .h5 file in its folder (results, checkpoint,
stage stores): every dataset and numeric root attribute bit for bit, clock readings left out.

    profile_fingerprints.py --write FILE SWEEP_DIR...   one line per finished run: "run<TAB>sweep/job<TAB>fingerprint
                                                        <TAB>entries" (written beside FILE, then renamed over it)
    profile_fingerprints.py --check FILE SWEEP_DIR...   the runs' fingerprints against FILE: every run that differs,
                                                        is missing or is new is named; exit 1 when any differs
    --ignore NAME (before the mode, repeatable): leave out of every run's fingerprint the datasets whose path inside
        their file is NAME (e.g. /claims/deterministic), to compare runs of a later commit with a page written before
        the commit added NAME: the other datasets are then compared bit for bit. Never used by scripts/reproduce.sh.

A run is a folder of a sweep folder holding results.h5. Exit status: 0; 1 a difference (--check); 2 bad arguments.
"""
import os
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from fingerprint import combined, path_entries  # noqa: E402
from script_io import usage_error  # noqa: E402

USAGE = ("usage: profile_fingerprints.py [--ignore NAME]... --write FILE SWEEP_DIR... | "
         "profile_fingerprints.py [--ignore NAME]... --check FILE SWEEP_DIR...")
HEADER = ("# One fingerprint per run of the profile (scripts/fingerprints/profile_fingerprints.py: every dataset and numeric\n"
          "# attribute of every .h5 file of the run, clocks left out). Written by scripts/reproduce.sh with the page;\n"
          "# `scripts/reproduce.sh --check` recomputes them and names every run that differs. Do not edit.\n")


def runs_of(sweep_dirs):
    """{"sweep/job": run folder} of every finished run (a results.h5) in the sweep folders, in name order."""
    runs = {}
    for sweep in sweep_dirs:
        if not os.path.isdir(sweep):
            usage_error(USAGE, f"no sweep folder {sweep}")
        name = os.path.basename(os.path.normpath(sweep))
        for job in sorted(os.listdir(sweep)):
            folder = os.path.join(sweep, job)
            if os.path.isfile(os.path.join(folder, "results.h5")):
                runs[f"{name}/{job}"] = folder
    return runs


def fingerprints(runs, ignore=()):
    """{run: (fingerprint, entries)}; an entry "file.h5:/path" whose /path is in `ignore` is left out."""
    out = {}
    for key, folder in runs.items():
        entries = {name: e for name, e in path_entries(folder).items() if name.split(":", 1)[1] not in ignore}
        out[key] = (combined(entries), len(entries))
    return out


def read_file(path):
    table = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 4 or fields[0] != "run":
                usage_error(USAGE, f"{path}:{number}: not a run fingerprint line")
            table[fields[1]] = (fields[2], int(fields[3]))
    return table


def write_file(path, table):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(HEADER)
        for key in sorted(table):
            f.write(f"run\t{key}\t{table[key][0]}\t{table[key][1]}\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def compare(committed, computed):
    """Messages, one per run that differs, is missing or is new; empty when equal."""
    lines = []
    for key in sorted(set(committed) | set(computed)):
        if key not in computed:
            lines.append(f"{key}: on the page, not among the runs (not run yet?)")
        elif key not in committed:
            lines.append(f"{key}: a run the page does not have")
        elif committed[key][0] != computed[key][0]:
            lines.append(f"{key}: fingerprint {computed[key][0]} differs from the page's {committed[key][0]} "
                         f"(find the first differing dataset with scripts/fingerprints/fingerprint.py --compare)")
    return lines


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        sys.exit(0)
    ignore = []
    while len(args) >= 2 and args[0] == "--ignore":
        if not args[1].startswith("/"):
            usage_error(USAGE, f"--ignore takes a dataset path inside a file (/group/name), not '{args[1]}'")
        ignore.append(args[1])
        args = args[2:]
    if len(args) < 3 or args[0] not in ("--write", "--check"):
        usage_error(USAGE, "give --write or --check, a FILE and at least one SWEEP_DIR")
    mode, path, sweeps = args[0], args[1], args[2:]
    computed = fingerprints(runs_of(sweeps), ignore)
    if mode == "--write":
        write_file(path, computed)
        print(f"profile_fingerprints: wrote {path} ({len(computed)} runs)", file=sys.stderr)
        return
    if not os.path.isfile(path):
        usage_error(USAGE, f"no fingerprints file {path}")
    lines = compare(read_file(path), computed)
    for line in lines:
        print(f"reproduce --check: {line}", file=sys.stderr)
    print(f"reproduce --check: {len(computed)} runs, {len(lines)} differ from {path}", file=sys.stderr)
    sys.exit(1 if lines else 0)


if __name__ == "__main__":
    main()
