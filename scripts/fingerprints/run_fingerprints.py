#!/usr/bin/python3
"""Short runs of every experiment family, fingerprinted and compared bit for bit with the committed fingerprints
(issue 46; ctest `fingerprints`; docs/testing.md, Fingerprints). Called through scripts/fingerprints.sh:

    scripts/fingerprints.sh [--build DIR] [--only FAMILY,...] [--work DIR] [--reference DIR] [--runs FILE] [--file FILE]
    scripts/fingerprints.sh --update [...]     rewrite FILE with this build's fingerprints (the one way to change it)

--build: the build folder holding iclab (default build). --runs: the families and their commands (default
scripts/fingerprints/runs.txt). --file: the fingerprints (default tests/data/fingerprints.txt). --only: these families
(and the ones they use), the others left as they are in FILE by --update. --work: where the runs go, replaced when an
earlier check made it (its marker .iclab_fingerprints), refused otherwise unless empty; default a temporary folder,
removed when every family matches and kept (its path printed) when one does not. --reference DIR: the --work folder
of another build's check: a family that differs is also compared with it element by element (first element, bits).
Exit status: 0 every family matches (or --update wrote FILE); 1 a family differs, is missing or a command could not
start; 2 bad arguments or a bad runs file (a usage line, nothing written).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from script_io import atomic_write_text, usage_error  # noqa: E402
from fingerprint import (Entry, combined, compare_paths, differences, format_fingerprints, path_entries,  # noqa: E402
                         read_fingerprints)

USAGE = ("usage: scripts/fingerprints.sh [--update] [--build DIR] [--only FAMILY,...] [--work DIR] [--reference DIR] "
         "[--runs FILE] [--file FILE]")
MARKER = ".iclab_fingerprints"
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def parse_args(argv):
    opts = {"update": False, "build": "build", "only": None, "work": None, "reference": None,
            "runs": os.path.join(SOURCE, "scripts", "fingerprints", "runs.txt"),
            "file": os.path.join(SOURCE, "tests", "data", "fingerprints.txt")}
    args = list(argv)
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        sys.exit(0)
    while args:
        a = args.pop(0)
        if a == "--update":
            opts["update"] = True
        elif a in ("--build", "--only", "--work", "--reference", "--runs", "--file"):
            if not args or args[0].startswith("--"):
                usage_error(USAGE, f"{a} needs a value")
            opts[a[2:]] = args.pop(0)
        else:
            usage_error(USAGE, f"unknown argument '{a}'")
    opts["iclab"] = os.path.abspath(os.path.join(opts["build"], "iclab"))
    if not os.access(opts["iclab"], os.X_OK):
        usage_error(USAGE, f"no {opts['iclab']} (build it first, or name the build with --build)")
    if not os.path.isfile(opts["runs"]):
        usage_error(USAGE, f"no runs file {opts['runs']}")
    if not opts["update"] and not os.path.isfile(opts["file"]):
        usage_error(USAGE, f"no fingerprints file {opts['file']} (make it with --update)")
    if opts["update"] and not os.path.isdir(os.path.dirname(os.path.abspath(opts["file"]))):
        usage_error(USAGE, f"the folder of {opts['file']} does not exist")
    if opts["reference"] and not os.path.isdir(os.path.join(opts["reference"], "out")):
        usage_error(USAGE, f"--reference {opts['reference']} is not the --work folder of a check (no out/ in it)")
    return opts


def read_runs(path):
    """[(family, [command words with placeholders])] in file order; a family may have several commands."""
    families, order = {}, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                words = shlex.split(line)
            except ValueError as e:
                usage_error(USAGE, f"{path}:{number}: {e}")
            family, command = words[0], words[1:]
            if not NAME.match(family) or not command:
                usage_error(USAGE, f"{path}:{number}: expected 'FAMILY iclab-arguments...' with a lower-case family name")
            for word in command:
                for used in re.findall(r"\{([^}]*)\}", word):
                    if used not in ("out", "tmp", "data") and used not in families:
                        usage_error(USAGE, f"{path}:{number}: {{{used}}} is no earlier family (nor out, tmp, data)")
            if family not in families:
                families[family] = []
                order.append(family)
            elif order[-1] != family:
                usage_error(USAGE, f"{path}:{number}: the commands of {family} must be on consecutive lines")
            families[family].append((number, command))
    return [(name, families[name]) for name in order]


def needed(runs, only):
    """The families to run: `only` and every family their commands use, in file order."""
    if only is None:
        return [name for name, _ in runs]
    wanted = set(only.split(","))
    known = {name for name, _ in runs}
    for name in wanted - known:
        usage_error(USAGE, f"--only: no family {name} in the runs file")
    commands = dict(runs)
    for name, _ in reversed(runs):
        if name in wanted:
            for _, command in commands[name]:
                for word in command:
                    wanted.update(u for u in re.findall(r"\{([^}]*)\}", word) if u in known)
    return [name for name, _ in runs if name in wanted]


def prepare_work(work):
    """The work folder, emptied if an earlier check made it; None when a temporary one is to be made."""
    if work is None:
        return tempfile.mkdtemp(prefix="iclab_fingerprints_")
    if os.path.lexists(work):
        if not os.path.isdir(work) or os.path.islink(work):
            usage_error(USAGE, f"--work {work} exists and is not a folder")
        if os.path.isfile(os.path.join(work, MARKER)):
            for entry in ("out", "tmp"):
                shutil.rmtree(os.path.join(work, entry), ignore_errors=True)
        elif os.listdir(work):
            usage_error(USAGE, f"--work {work} exists and was not made by a fingerprint check: remove it or name another")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, MARKER), "w") as f:
        f.write("scripts/fingerprints.sh work folder: replaced by the next check with this --work\n")
    return os.path.abspath(work)


def run_family(opts, work, family, commands):
    """Runs a family's commands; returns its entries (the outputs' plus one exit status per command)."""
    out, tmp = os.path.join(work, "out", family), os.path.join(work, "tmp", family)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.makedirs(tmp, exist_ok=True)
    places = {"out": out, "tmp": tmp, "data": os.path.join(SOURCE, "tests", "data", "fingerprints")}
    extra = {}
    for index, (number, command) in enumerate(commands, 1):
        words = [re.sub(r"\{([^}]*)\}", lambda m: places.get(m.group(1)) or os.path.join(work, "out", m.group(1)), w)
                 for w in command]
        if words[0] == "run":
            words += [f"output.dir={os.path.dirname(out)}", f"output.name={family}", "--quiet", "--threads", "1"]
        elif any(w.startswith(out + os.sep) for w in words):
            os.makedirs(out, exist_ok=True)  # a command writing a file inside {out}/
        try:
            done = subprocess.run([opts["iclab"]] + words, cwd=SOURCE, capture_output=True, text=True, timeout=900,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"fingerprints: {family}: runs file line {number}: {e}", file=sys.stderr)
            return None
        if done.returncode != 0:
            tail = "\n    ".join(done.stderr.strip().splitlines()[-5:])
            print(f"fingerprints: {family}: line {number} exited {done.returncode} (kept in the fingerprint):\n    {tail}",
                  file=sys.stderr)
        extra[f"command {index}:exit"] = Entry(f"command {index}:exit", "exit", "scalar", str(done.returncode))
    entries = path_entries(out) if os.path.exists(out) else {}
    entries.update(extra)
    return entries


def machine_class():
    """The CPU (vendor, family, model, vector set) and the compiler the fingerprints are compared on: one line."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("vendor_id", "cpu family", "model", "model name", "flags") and key not in fields:
                    fields[key] = value.strip()
    except OSError:
        pass
    flags = fields.get("flags", "").split()
    simd = "AVX-512" if "avx512f" in flags else "AVX2+FMA" if "avx2" in flags and "fma" in flags else "other"
    compiler = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    return (f"cpu {fields.get('vendor_id', '?')} family {fields.get('cpu family', '?')} model {fields.get('model', '?')} "
            f"({fields.get('model name', '?')}), {simd}; compiler {compiler[0] if compiler else '?'}")


def machine_file(fingerprints_file):
    return os.path.splitext(fingerprints_file)[0] + "_machine.txt"


def main():
    opts = parse_args(sys.argv[1:])
    # Bits are pinned across CPUs (issue 46: contraction off, multiply-adds written out, libm's variants tested; an
    # x86-64-v3 build run with OpenBLAS's Haswell kernels and glibc's AVX-512 variants off gave every family's bits
    # on an AVX-512 CPU, 2026-11-29), so the committed fingerprints are compared on every CPU: a machine whose bits
    # differ fails. The machine that made them is named in a mismatch's message.
    here = machine_class()
    made_on_path = machine_file(opts["file"])
    made_on = ""
    if os.path.isfile(made_on_path):
        with open(made_on_path) as f:
            made_on = f.read().strip()
    runs = read_runs(opts["runs"])
    chosen = needed(runs, opts["only"])
    committed = read_fingerprints(opts["file"], USAGE) if os.path.isfile(opts["file"]) else {}
    made_temporary = opts["work"] is None
    work = prepare_work(opts["work"])
    computed, failed, started = {}, [], time.time()
    for family, commands in runs:
        if family not in chosen:
            continue
        begin = time.time()
        entries = run_family(opts, work, family, commands)
        if entries is None:
            failed.append(family)
            continue
        computed[family] = (combined(entries), entries)
        status = "computed"
        if not opts["update"]:
            status = "ok" if committed.get(family, ("",))[0] == computed[family][0] else "DIFFERS"
        print(f"fingerprints: {family:24s} {computed[family][0]}  {len(entries):5d} entries  {time.time() - begin:6.1f} s  "
              f"{status}", flush=True)
    print(f"fingerprints: {len(computed)} families in {time.time() - started:.0f} s ({opts['iclab']})")
    if failed:
        print(f"fingerprints: FAILED to run {', '.join(failed)}; work folder kept: {work}", file=sys.stderr)
        sys.exit(1)
    if opts["update"]:
        merged = {} if opts["only"] is None else dict(committed)
        merged.update(computed)
        ordered = {name: merged[name] for name, _ in runs if name in merged}
        atomic_write_text(opts["file"], format_fingerprints(ordered))
        atomic_write_text(made_on_path, here + "\n")
        print(f"fingerprints: wrote {opts['file']} ({len(ordered)} families)")
        if made_temporary:
            shutil.rmtree(work, ignore_errors=True)
        sys.exit(0)
    problems = []
    for family, (fingerprint, entries) in computed.items():
        if family not in committed:
            problems.append(f"{family}: not in {opts['file']} (a new family: scripts/fingerprints.sh --update)")
            continue
        message = differences(committed[family], (fingerprint, entries), f"{family}", opts["file"])
        if message is None:
            continue
        if opts["reference"]:
            lines = compare_paths(os.path.join(opts["reference"], "out", family), os.path.join(work, "out", family))
            message += f"\n    against --reference: {lines[0] if lines else 'equal outputs'}"
        problems.append(message)
    if opts["only"] is None:
        problems += [f"{family}: in {opts['file']} but not in the runs file" for family in committed if family not in computed]
    if problems:
        print("fingerprints: MISMATCH (this build's bits differ from the committed ones):", file=sys.stderr)
        if made_on and made_on != here:
            print(f"  (the file was made on [{made_on}]; this is [{here}]: the bits differ across machines, which "
                  "issue 46 rules out: report it with this output)", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        print(f"fingerprints: outputs kept in {work}/out; if the change is intended: scripts/fingerprints.sh --update",
              file=sys.stderr)
        sys.exit(1)
    print(f"fingerprints: all {len(computed)} families equal to {opts['file']}")
    if made_temporary:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
