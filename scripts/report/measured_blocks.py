"""The age test of the measured blocks (issue 46, "one commit of record"): every number a README or a docs page shows
that iclab computed sits in a measured block that names the commit it was measured at, and the bits of that commit are
still the bits of the checkout: every dataset line of tests/data/fingerprints.txt at the block's commit, of the
fingerprint families the block depends on, is in the current file (lines only added, a new family or the datasets of a
new option, leave older numbers as they were; a line changed or removed means the bits moved, and the block must be
regenerated). The first column of a line is its family (scripts/fingerprints/runs.txt; scripts/report/families.py
says which families a run or a command depends on); a block that names no families depends on every family.

A measured block is one of (docs/testing.md#measured-blocks-every-published-number-names-its-commit-issue-46 states the syntax, the one place):
  <!-- measured: kind=bits|timed commit=HEX [cpu="…"] [families="a,b"] source="COMMAND" --> … <!-- /measured -->
                     families: the fingerprint families its numbers depend on (`families.py --command "COMMAND"`
                     prints them for a command); without it: every family (any moved line makes the block stale)
  <!-- table: run=… dataset=… … --> … <!-- /table -->          scripts/report/readme_tables.py; kind bits, the commit
  <!-- figure: run=… command=… out=… --> … <!-- /figure -->    is the "commit HEX" of its caption (kind=timed in
                                                                 the opener: a timed block, its caption names the CPU),
                                                                 the families its "Fingerprint families: a, b" (the
                                                                 runs'; none named: every family)
  <!-- claims:PROFILE --> … <!-- /claims:PROFILE -->           scripts/report/readme_claims.py; kind bits, the commit
                                                                 is the "commit HEX" of its first line; it ages with
                                                                 its page (docs/reproduction[_PROFILE].md) when the
                                                                 page has a record table, and must be of its commit
and a generated page whose title names its commit (docs/reproduction.md: "# iclab reproduction: profile quick, commit HEX")
and whose record table (make_report.py: "| commit | fingerprint families | runs |", one row per commit and families of
its runs) judges each row by its own families; a page without one is judged by its title's commit and every family.

Rules: a bits block names a commit git knows, measured on a clean tree ("(dirty)" after the commit fails), whose
fingerprint lines (of its families) are all in the current file, and whose families are families of the current file
(--threshold COMMIT: instead, the commit must descend from COMMIT). A timed
block names a commit and a cpu; it is exempt from the age rule (wall times measure a machine, not bits). Outside any block, a
markdown table that looks measured (rows with >= 2 decimal or exponent numbers, outside code fences, in a section whose
title or preceding paragraph says measured / results / ours) is "unmarked": an error (a warning with --warn-unmarked).

  measured_blocks.py --check [--root DIR] [--warn-unmarked] [--threshold COMMIT] [--exclude-marker M ...] [FILE ...]
      --exclude-marker claims:paper: leave those blocks unchecked (e.g. until the paper profile is rerun)
  measured_blocks.py --list  [--root DIR] [FILE ...]           every block: file, line, kind, commit, cpu, families

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
# readme_tables.py's caption: "…; do not edit. Fingerprint families: a, b.*" ("all": every family)
CAPTION_FAMILIES = re.compile(r"[Ff]ingerprint families: ([a-z0-9_]+(?:, ?[a-z0-9_]+)*)")
# the page's record (make_report.py): one row per commit and families of its runs
RECORD_HEADER = "| commit | fingerprint families | runs |"


from markers import MarkerError, attributes, quoted  # noqa: E402,F401
from families import parse as parse_families, text_of as families_text  # noqa: E402


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
                 "kind": "bits", "commit": None, "dirty": False, "cpu": None, "families": None, "profile": m.group(2)}
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
            if "families" in attrs:
                block["families"] = parse_families(attrs["families"])
                if block["families"] is None and attrs["families"].strip() != "all":
                    raise MarkerError(f"line {line}: families=\"{attrs['families']}\" names no family (or: all)")
        else:
            c = TEXT_COMMIT.search(body)
            if c:
                block["commit"], block["dirty"] = c.group(1), bool(c.group(2))
            if opener in ("table:", "figure:") and attributes(m.group(3)).get("kind") == "timed":
                # a generated table of times: readme_tables.py's caption "…: commit X[ (dirty)], CPU; do not edit."
                block["kind"] = "timed"
                cpu = re.search(r"commit [0-9a-f]{7,40}(?: \(dirty\))?, (.+?); do not edit", body)
                block["cpu"] = cpu.group(1) if cpu else None
            if opener in ("table:", "figure:"):
                named = CAPTION_FAMILIES.search(body)
                block["families"] = parse_families(named.group(1)) if named else None
        found.append(block)
        pos = end + len(close)
    return found


def page_record(text):
    """The page's record table (make_report.py): [(commit, dirty, families or None, runs)], one row per commit and
    families of its runs; None when the page has none (an older page: judged by its title's commit, every family)."""
    lines = text.split("\n")
    if RECORD_HEADER not in lines:
        return None
    rows = []
    for line in lines[lines.index(RECORD_HEADER) + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"([0-9a-f]{7,40})( \(dirty\))?", cells[0]) if len(cells) == 3 else None
        if not m:
            raise MarkerError(f"a record row that is not '| COMMIT[ (dirty)] | FAMILIES | RUNS |': {line[:80]}")
        rows.append((m.group(1), bool(m.group(2)), parse_families(cells[1]), cells[2]))
    return rows


def page_block(text):
    """A generated page whose title names its commit (docs/reproduction.md), as one bits block; else None. With a
    record table, each row (the runs of one commit and families) is judged by its own families."""
    m = PAGE_TITLE.search(text[:400])
    if not m:
        return None
    return {"line": 1, "end_line": text.count("\n") + 1, "marker": "page", "body": text, "kind": "bits",
            "commit": m.group(1), "dirty": bool(m.group(2)), "cpu": None, "families": None, "record": page_record(text)}


def profile_page(profile):
    """The page a claims:PROFILE block is copied from (readme_claims.py): docs/reproduction[_PROFILE].md."""
    return "docs/reproduction.md" if profile == "quick" else f"docs/reproduction_{profile}.md"


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


def family_of(line):
    return line.split("\t", 1)[0]


class Fingerprints:
    """The age rule without a threshold: a bits block is current when every dataset line of tests/data/fingerprints.txt
    at its commit, of the families it depends on (all of them when it names none), is in the current file (the
    checkout's). A later commit that only adds lines (a new family, the datasets of a new option) leaves it current; one
    that changed or removed any of those lines (bits moved) makes it stale, whatever happened in between (a change made
    and then undone leaves it current); a change of another family's lines leaves it current."""

    def __init__(self, root):
        self.root = root
        with open(os.path.join(root, FINGERPRINTS), encoding="utf-8") as f:
            self.current = dataset_lines(f.read())
        self.families = {family_of(line) for line in self.current}
        self.cache = {}

    def missing(self, commit, families=None):
        """The first dataset line of the fingerprints at `commit`, of `families` (None: every family), that the current
        file lacks (None: none)."""
        if commit not in self.cache:
            r = git(self.root, "show", f"{commit}:{FINGERPRINTS}")
            if r.returncode != 0:
                self.cache[commit] = f"(no {FINGERPRINTS} at {commit})"
            else:
                self.cache[commit] = sorted(dataset_lines(r.stdout) - self.current)
        gone = self.cache[commit]
        if isinstance(gone, str):
            return gone
        return next((line for line in gone if families is None or family_of(line) in families), None)


def families_phrase(families):
    return "every family" if families is None else "families " + ", ".join(sorted(families))


def age_problems(root, threshold, commit, families, what):
    """The age rule for one commit of record: `what` names it in the message."""
    if isinstance(threshold, Fingerprints):
        unknown = sorted(set(families or ()) - threshold.families)
        if unknown:
            return [f"{what} names the family {unknown[0]}, which the current {FINGERPRINTS} has no line of"]
        gone = threshold.missing(commit, families)
        if gone is not None:
            return [f"the bits moved since {what} ({families_phrase(families)}): its {FINGERPRINTS} line '{gone[:100]}' "
                    "is not in the current file (regenerate the block)"]
    elif git(root, "merge-base", "--is-ancestor", threshold, commit).returncode != 0:
        return [f"{what} is older than {threshold[:12]}, the given threshold"]
    return []


def check_block(root, block, threshold):
    """The reasons this block fails (empty: it passes). threshold: a Fingerprints (the default rule) or a commit the
    block's commit must descend from (--threshold). A block with a "record" (a page's record table, or a claims block
    given its page's) is judged by each row: the runs of one commit, by their own families."""
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
    record = block.get("record")
    if record is None:
        return problems + age_problems(root, threshold, commit, block["families"], f"commit {commit}")
    if block.get("page_commit") and not (block["page_commit"].startswith(commit) or commit.startswith(block["page_commit"])):
        problems.append(f"copied from the report of commit {commit}, but {block['page']} is of commit "
                        f"{block['page_commit']} (readme_claims.py)")
    for row_commit, dirty, families, runs in record:
        what = f"commit {row_commit} ({runs} run{'' if runs == '1' else 's'} on {block.get('page', 'the page')})"
        if git(root, "rev-parse", "--verify", "--quiet", f"{row_commit}^{{commit}}").returncode != 0:
            problems.append(f"{what}: unknown to git")
        elif dirty:
            problems.append(f"{what}: made on a dirty tree")
        else:
            problems += age_problems(root, threshold, row_commit, families, what)
    return problems


def with_page_record(root, block, pages):
    """A claims:PROFILE block ages with its page's record (the page's runs, each by its families) when the page has
    one; else (no page, an older page) by its own commit and every family."""
    if block["marker"] != f"claims:{block.get('profile')}" or not block.get("profile"):
        return block
    page = profile_page(block["profile"])
    if page not in pages:
        path = os.path.join(root, page)
        pages[page] = None
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                try:
                    pages[page] = page_block(f.read())
                except MarkerError as e:
                    raise MarkerError(f"{page} (the page of a {block['marker']} block): {e}")
    found = pages[page]
    if not found or found.get("record") is None:
        return block
    return dict(block, record=found["record"], page=page, page_commit=found["commit"])


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
    pages = {}  # the pages of the claims blocks' profiles, read once
    for path in files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            found = blocks(text)
        except MarkerError as e:
            raise MarkerError(f"{rel}: {e}")
        try:
            page = page_block(text)
        except MarkerError as e:
            raise MarkerError(f"{rel}: {e}")
        if page:
            page["page"] = rel
            found.append(page)
        for b in found:
            if b["marker"] in exclude:
                continue
            for p in check_block(root, with_page_record(root, b, pages), threshold):
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
                    record = f"record of {len(b['record'])} rows" if b.get("record") is not None else ""
                    print(f"{os.path.relpath(path, root)}:{b['line']}\t{b['marker']}\t{b['kind']}\t{b['commit'] or '-'}"
                          f"{' (dirty)' if b['dirty'] else ''}\t{b['cpu'] or ''}\t{record or families_text(b['families'])}")
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
