"""The age test of the measured blocks (issue 46, "one commit of record"): every number a README or a docs page shows
that iclab computed sits in a measured block that names the commit it was measured at, and the bits of that commit are
still the bits of the checkout: every dataset line of tests/data/fingerprints.txt at the block's commit is in the current
file (lines only added, a new family or the datasets of a new option, leave older numbers as they were; a line changed
or removed means the bits moved, and the block must be regenerated).

A measured block is one of (docs/testing.md#measured-blocks-every-published-number-names-its-commit-issue-46 states the syntax, the one place):
  <!-- measured: kind=bits|timed commit=HEX [cpu="…"] source="COMMAND" --> … <!-- /measured -->
  <!-- table: run=… dataset=… … --> … <!-- /table -->          scripts/report/readme_tables.py; kind bits, the commit
  <!-- figure: run=… command=… out=… --> … <!-- /figure -->    is the "commit HEX" of its caption (kind=timed in
                                                                 the opener: a timed block, its caption names the CPU)
  <!-- claims:PROFILE --> … <!-- /claims:PROFILE -->           scripts/report/readme_claims.py; kind bits, the commit
                                                                 is the "commit HEX" of its first line
and a generated page whose title names its commit (docs/reproduction.md: "# iclab reproduction: profile quick, commit HEX").

Rules: a bits block names a commit git knows, measured on a clean tree ("(dirty)" after the commit fails), whose
fingerprint lines are all in the current file (--threshold COMMIT: instead, the commit must descend from COMMIT). A timed
block names a commit and a cpu; it is exempt from the age rule (wall times measure a machine, not bits). Outside any block, a
markdown table that looks measured (rows with >= 2 decimal or exponent numbers, outside code fences, in a section whose
title or preceding paragraph says measured / results / ours) is "unmarked": an error (a warning with --warn-unmarked).

  measured_blocks.py --check [--root DIR] [--warn-unmarked] [--threshold COMMIT] [--exclude-marker M ...] [FILE ...]
      --exclude-marker claims:paper: leave those blocks unchecked (e.g. until the paper profile is rerun)
  measured_blocks.py --list  [--root DIR] [FILE ...]           every block: file, line, kind, commit (no checks)

Files (default): README.md, experiments/*/README.md, docs/*.md except the dated logs docs/performance_log*.md,
docs/bench_history*, docs/reproduction_paper.md (the paper page, checked with its profile) and
docs/reproduction_plan_paper.md (a plan: states and estimates); docs/history/ is not scanned (dated logs).
Exit status: 77 (--check in a shallow clone: nothing can be checked; ctest reads it as skipped); 0 every block passes; 1 a block fails or a table is unmarked (not with --warn-unmarked); 2 bad arguments, broken
markers, or not a git checkout.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FINGERPRINTS = "tests/data/fingerprints.txt"
EXCLUDED = ("docs/reproduction_paper.md", "docs/reproduction_plan_paper.md")

OPEN = re.compile(r"<!--\s*(measured:|table:|figure:|claims:([a-z0-9_]+))(.*?)-->")
CLOSE = {"measured:": "<!-- /measured -->", "table:": "<!-- /table -->", "figure:": "<!-- /figure -->"}
TEXT_COMMIT = re.compile(r"\bcommit[s]?\s+\**`?([0-9a-f]{7,40})`?\**(\s*\(dirty\)|-dirty)?")
PAGE_TITLE = re.compile(r"^# iclab reproduction: profile [a-z0-9_]+, commit ([0-9a-f]{7,40})(\s*\(dirty\)|-dirty)?", re.M)
NUMBER = re.compile(r"(?<![\w.])[-+−]?(\d+\.\d+|\.\d+|\d+(\.\d+)?[eE][-+−]?\d+)(?![\w.])")
REFERENCE = re.compile(r"(§|\b(Theorem|Thm\.?|Tables?|Figures?|Fig\.|Eqs?\.|Prop\.|Proposition|Lemma|App\.|Appendix|"
                       r"Algorithm|Alg\.|Section|spec|v))\s*\d+(\.\d+)*", re.I)  # "§6.2", "Theorem 4.1": not numbers
MEASURED_WORDS = re.compile(r"\bmeasured\b|\bmeasurements?\b|\bresults?\b|\bours\b|\bour\b", re.I)


from markers import MarkerError, attributes, quoted  # noqa: E402,F401


def blocks(text):
    """The measured blocks of a markdown text: dicts with line, kind, commit, dirty, cpu, marker, body; raises
    MarkerError on an unclosed or nested block or a bad attribute."""
    found = []
    pos = 0
    while True:
        m = OPEN.search(text, pos)
        if not m:
            break
        if quoted(text, m.start()):
            pos = m.end()
            continue
        line = text.count("\n", 0, m.start()) + 1
        opener = m.group(1)
        close = CLOSE.get(opener, f"<!-- /claims:{m.group(2)} -->" if m.group(2) else None)
        end = text.find(close, m.end())
        if end < 0:
            raise MarkerError(f"line {line}: {m.group(0)[:60]} has no {close}")
        body = text[m.end():end]
        if OPEN.search(body):
            raise MarkerError(f"line {line}: a measured block inside another")
        block = {"line": line, "end_line": text.count("\n", 0, end) + 1, "marker": opener.rstrip(":"), "body": body,
                 "kind": "bits", "commit": None, "dirty": False, "cpu": None}
        if opener == "measured:":
            attrs = attributes(m.group(3))
            block["kind"] = attrs.get("kind", "")
            if block["kind"] not in ("bits", "timed"):
                raise MarkerError(f"line {line}: kind={block['kind']!r}, not bits or timed")
            commit = attrs.get("commit", "")
            block["dirty"] = commit.endswith("-dirty")
            block["commit"] = commit[:-6] if block["dirty"] else (commit or None)
            block["cpu"] = attrs.get("cpu") or None
            block["source"] = attrs.get("source")
        else:
            c = TEXT_COMMIT.search(body)
            if c:
                block["commit"], block["dirty"] = c.group(1), bool(c.group(2))
            if opener in ("table:", "figure:") and attributes(m.group(3)).get("kind") == "timed":
                # a generated table of times: readme_tables.py's caption "…: commit X[ (dirty)], CPU; do not edit."
                block["kind"] = "timed"
                cpu = re.search(r"commit [0-9a-f]{7,40}(?: \(dirty\))?, (.+?); do not edit", body)
                block["cpu"] = cpu.group(1) if cpu else None
        found.append(block)
        pos = end + len(close)
    return found


def page_block(text):
    """A generated page whose title names its commit (docs/reproduction.md), as one bits block; else None."""
    m = PAGE_TITLE.search(text[:400])
    if not m:
        return None
    return {"line": 1, "end_line": text.count("\n") + 1, "marker": "page", "body": text, "kind": "bits",
            "commit": m.group(1), "dirty": bool(m.group(2)), "cpu": None}


def default_files(root):
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "experiments", "*", "README.md")))
    for path in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        rel = os.path.relpath(path, root)
        if rel in EXCLUDED or os.path.basename(path).startswith("performance_log"):
            continue
        files.append(path)
    return [f for f in files if os.path.isfile(f)]


def git(root, *args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True)


def dataset_lines(text):
    """The lines of a fingerprints file that carry bits: not comments, not a family's header line ("family NAME HASH
    ENTRIES", which changes with any dataset added to the family)."""
    return {line for line in text.splitlines() if line.strip() and not line.startswith(("#", "family\t"))}


class Fingerprints:
    """The age rule without a threshold: a bits block is current when every dataset line of tests/data/fingerprints.txt
    at its commit is in the current file (the checkout's). A later commit that only adds lines (a new family, the
    datasets of a new option) leaves it current; one that changed or removed any of its lines (bits moved) makes it
    stale, whatever happened in between (a change made and then undone leaves it current)."""

    def __init__(self, root):
        self.root = root
        with open(os.path.join(root, FINGERPRINTS), encoding="utf-8") as f:
            self.current = dataset_lines(f.read())
        self.cache = {}

    def missing(self, commit):
        """The first dataset line of the fingerprints at `commit` that the current file lacks (None: none)."""
        if commit not in self.cache:
            r = git(self.root, "show", f"{commit}:{FINGERPRINTS}")
            if r.returncode != 0:
                self.cache[commit] = f"(no {FINGERPRINTS} at {commit})"
            else:
                gone = sorted(dataset_lines(r.stdout) - self.current)
                self.cache[commit] = gone[0] if gone else None
        return self.cache[commit]


def check_block(root, block, threshold):
    """The reasons this block fails (empty: it passes). threshold: a Fingerprints (the default rule) or a commit the
    block's commit must descend from (--threshold)."""
    problems = []
    commit = block["commit"]
    if not commit:
        return ["names no commit"]
    if block["kind"] == "timed":
        if not block["cpu"]:
            problems.append("a timed block names no cpu")
    if git(root, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").returncode != 0:
        return problems + [f"commit {commit} is unknown to git"]
    if block["kind"] == "timed":
        return problems  # a machine's times: no ancestry rule
    if block["dirty"]:
        problems.append(f"measured on a dirty tree at {commit}")
    if isinstance(threshold, Fingerprints):
        gone = threshold.missing(commit)
        if gone is not None:
            problems.append(f"the bits moved since commit {commit}: its {FINGERPRINTS} line '{gone[:100]}' is not in the "
                            "current file (regenerate the block)")
    elif git(root, "merge-base", "--is-ancestor", threshold, commit).returncode != 0:
        problems.append(f"commit {commit} is older than {threshold[:12]}, the given threshold")
    return problems


def fence_mask(lines):
    inside, mask = False, []
    for line in lines:
        if line.lstrip().startswith("```"):
            inside = not inside
            mask.append(True)
            continue
        mask.append(inside)
    return mask


def unmarked_tables(text, spans):
    """First lines (1-based) of the markdown tables outside blocks and code fences that look measured."""
    lines = text.split("\n")
    fenced = fence_mask(lines)
    covered = set()
    for a, b in spans:
        covered.update(range(a, b + 1))
    heading, paragraph, tables, fresh = "", "", [], True
    i = 0
    while i < len(lines):
        line = lines[i]
        if fenced[i] or (i + 1) in covered:
            i += 1
            continue
        if line.startswith("#"):
            heading, paragraph, fresh = line, "", True
        elif line.lstrip().startswith("|"):
            start, numeric = i, 0
            while i < len(lines) and lines[i].lstrip().startswith("|") and not fenced[i] and (i + 1) not in covered:
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if sum(1 for c in cells if NUMBER.search(REFERENCE.sub("", c))) >= 2:
                    numeric += 1
                i += 1
            if numeric and MEASURED_WORDS.search(heading + " " + paragraph):
                tables.append(start + 1)
            paragraph, fresh = "", True
            continue
        elif line.strip():
            paragraph = line if fresh else paragraph + " " + line
            fresh = False
        else:
            fresh = True  # the next text line starts a new paragraph; this one stays the table's preceding paragraph
        i += 1
    return tables


def scan(root, files, threshold, strict=False, out=sys.stderr, exclude=()):
    """Checks the files; returns (failures, unmarked) counts, printing one line per problem."""
    failures = unmarked = 0
    for path in files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            found = blocks(text)
        except MarkerError as e:
            raise MarkerError(f"{rel}: {e}")
        page = page_block(text)
        if page:
            found.append(page)
        for b in found:
            if b["marker"] in exclude:
                continue
            for p in check_block(root, b, threshold):
                failures += 1
                print(f"{rel}:{b['line']}: {b['marker']} block: {p}", file=out)
        if page:
            continue  # a generated page is one block: its tables are in it
        for line in unmarked_tables(text, [(b["line"], b["end_line"]) for b in found]):
            unmarked += 1
            print(f"{rel}:{line}: {'error' if strict else 'warning'}: a measured-looking table outside any measured block", file=out)
    return failures, unmarked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--list", action="store_true")
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--warn-unmarked", action="store_true", help="unmarked measured-looking tables only warn")
    parser.add_argument("--threshold", help="instead of the fingerprint rule: a commit every bits block must descend from")
    parser.add_argument("--exclude-marker", action="append", default=[], metavar="MARKER",
                        help="a marker whose blocks are not checked (measured, table, figure, page, claims:PROFILE)")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    files = [os.path.abspath(f) for f in args.files] or default_files(root)
    for f in files:
        if not os.path.isfile(f):
            parser.error(f"no file {f}")
    try:
        if args.list:
            for path in files:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for b in blocks(text) + ([page_block(text)] if page_block(text) else []):
                    print(f"{os.path.relpath(path, root)}:{b['line']}\t{b['marker']}\t{b['kind']}\t{b['commit'] or '-'}"
                          f"{' (dirty)' if b['dirty'] else ''}\t{b['cpu'] or ''}")
            return 0
        if git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            print(f"measured_blocks: {root} is a shallow clone, without the commits the blocks name: not checked "
                  "(exit 77, a skip for ctest; `git fetch --unshallow` to check)", file=sys.stderr)
            return 77
        if args.threshold:
            threshold = args.threshold
            if git(root, "rev-parse", "--verify", "--quiet", f"{threshold}^{{commit}}").returncode != 0:
                raise MarkerError(f"threshold {threshold} is unknown to git")
        else:
            if not os.path.isfile(os.path.join(root, FINGERPRINTS)):
                raise MarkerError(f"no {FINGERPRINTS} in {root}")
            threshold = Fingerprints(root)
        failures, unmarked = scan(root, files, threshold, not args.warn_unmarked, exclude=set(args.exclude_marker))
    except MarkerError as e:
        print(f"measured_blocks: {e}", file=sys.stderr)
        return 2
    print(f"measured_blocks: {len(files)} files, {failures} failing blocks, {unmarked} unmarked measured-looking tables"
          f" ({'threshold ' + threshold[:12] if isinstance(threshold, str) else 'against the current ' + FINGERPRINTS})",
          file=sys.stderr)
    return 1 if failures or (unmarked and not args.warn_unmarked) else 0


if __name__ == "__main__":
    sys.exit(main())
