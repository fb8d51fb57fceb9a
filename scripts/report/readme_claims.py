"""Each experiment README's generated claims block: the rows of the latest report for the claims that README explains.

make_report.py writes OUT/readme_blocks.json ({README path: its rows}); scripts/reproduce.sh then puts each block
between the README's markers `<!-- claims:PROFILE -->` and `<!-- /claims:PROFILE -->` (a section appended at the end
when the README has none yet), so the measured claims a README shows are the report's, at the report's commit, and
the README says in its own words which claims are not reproduced.

  readme_claims.py OUT/readme_blocks.json --profile quick            write the blocks
  readme_claims.py OUT/readme_blocks.json --profile quick --check    only list the READMEs whose block differs
  readme_claims.py --against-page docs/reproduction.md --profile quick
                                                    every README block's rows equal the committed page's (no runs needed)
  --root DIR: the checkout whose experiments/*/README.md are meant (default: this script's checkout)

Exit status: 0 written, or (--check) every block equals the report's; 1 (--check) a README's block differs from the
report's (or is missing), listed on stderr; 2 bad arguments, an unreadable blocks file or broken markers.
--against-page (ctest readme_claims_page; issue 45, "generated, never hand-written"): the rows of each README's block
(its compact tables) are exactly the page's rows of the claims that README explains (the page's details name the README
of each row), each with the page's details entry (statement, rule, values, provenance, robustness), and the block's
counts line agrees with its rows: a hand-edited row, entry or count, a row missing from either side, or a block left
from another report fails (exit 1). `scripts/reproduce.sh --check` runs it too.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_write_text  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def markers(profile):
    return f"<!-- claims:{profile} -->", f"<!-- /claims:{profile} -->"


def replace_block(text, profile, block):
    """`text` with the profile's block replaced (or appended as a new section); raises ValueError on broken markers."""
    begin, end = markers(profile)
    if text.count(begin) != text.count(end) or text.count(begin) > 1:
        raise ValueError(f"the markers {begin} / {end} are unbalanced or repeated")
    inner = f"{begin}\n{block.rstrip()}\n{end}"
    if begin in text:
        return re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: inner, text, flags=re.S)
    return text.rstrip("\n") + f"\n\n## Claims of record: {profile} profile (generated)\n\n{inner}\n"


ROW = re.compile(r"^\| (?!claim \|)(?!---)")  # a compact-table row (not its header or rule line)
EXPLAINED = re.compile(r"; explained in \[[^\]]*\]\(([^)#]+)[^)]*\)$")


def table_rows(lines):
    """[(rows, details entries)] of each compact table in `lines`: a table's rows, then its <details> entries in order."""
    tables, i = [], 0
    while i < len(lines):
        if lines[i].startswith("| claim | "):
            rows = []
            i += 2
            while i < len(lines) and ROW.match(lines[i]):
                rows.append(lines[i])
                i += 1
            entries = []
            while i < len(lines) and not lines[i].startswith("<details>"):
                i += 1
            while i < len(lines) and lines[i] != "</details>":
                if lines[i].startswith('- <a id="'):
                    entries.append(lines[i])
                i += 1
            tables.append((rows, entries))
        i += 1
    return tables


def page_rows_by_readme(page_text, page_path):
    """{README repo path: sorted (row, details entry)} of the page, each row given to the README its details entry
    names; the entry without its "; explained in [...](README)" suffix, as the README's own block has it."""
    out, base = {}, os.path.dirname(page_path)
    for rows, entries in table_rows(page_text.splitlines()):
        if len(rows) != len(entries):
            raise ValueError(f"a table of {len(rows)} rows has {len(entries)} details entries")
        for row, entry in zip(rows, entries):
            m = EXPLAINED.search(entry)
            if m:
                readme = os.path.normpath(os.path.join(base, m.group(1)))
                out.setdefault(readme, []).append((row, entry[:m.start()]))
    return {k: sorted(v) for k, v in out.items()}


VERDICT_CELL = re.compile(r"\| (\*\*)?(reproduced|not reproduced|inconclusive|not run)(\*\*)? \|")
SUMMARY = re.compile(r"^\*\*(\d+) claims?: (\d+) reproduced, (\d+) not reproduced, (\d+) inconclusive, (\d+) not run\.\*\*")


def summary_problem(inner):
    """The block's counts line against its own rows (the claims' tables, before any spec-gate table): a hand-edited
    count, or counts left from another report, differ; None when they agree or the block has no counts line."""
    lines = inner.splitlines()
    line = next((l for l in lines if SUMMARY.match(l)), None)
    if line is None:
        return None
    own = inner.split("Spec gates, counted from the rows above:", 1)[0]
    verdicts = [m.group(2) for rows, _ in table_rows(own.splitlines()) for r in rows for m in [VERDICT_CELL.search(r)] if m]
    counted = [len(verdicts)] + [verdicts.count(v) for v in ("reproduced", "not reproduced", "inconclusive", "not run")]
    stated = [int(g) for g in SUMMARY.match(line).groups()]
    return None if counted == stated else f"its counts line says {stated[0]} claims ({', '.join(map(str, stated[1:]))}), its rows {counted[0]} ({', '.join(map(str, counted[1:]))})"


def check_against_page(root, page, profile):
    """README blocks against the committed page: 0 equal, 1 differences (listed on stderr)."""
    with open(os.path.join(root, page), encoding="utf-8") as f:
        expected = page_rows_by_readme(f.read(), page)
    begin, end = markers(profile)
    problems, blocks = [], 0
    readmes = sorted(set(expected) | {os.path.relpath(os.path.join(d, "README.md"), root)
                                      for d in (os.path.join(root, "experiments", e) for e in os.listdir(os.path.join(root, "experiments")))
                                      if os.path.isfile(os.path.join(d, "README.md"))})
    for readme in readmes:
        path = os.path.join(root, readme)
        text = open(path, encoding="utf-8").read() if os.path.isfile(path) else ""
        if begin not in text:
            if readme in expected:
                problems.append(f"{readme}: no {begin} block, the page has {len(expected[readme])} of its rows")
            continue
        blocks += 1
        inner = text.split(begin, 1)[1].split(end, 1)[0]
        pairs = sorted((r, e) for table, entries in table_rows(inner.splitlines()) for r, e in zip(table, entries))
        rows = sorted(r for table, _ in table_rows(inner.splitlines()) for r in table)
        want = expected.get(readme, [])
        want_rows = sorted(r for r, _ in want)
        if rows != want_rows:
            only_readme = [r for r in rows if r not in want_rows]
            only_page = [r for r in want_rows if r not in rows]
            first = (only_readme or only_page or ["(the same rows, other counts)"])[0]
            problems.append(f"{readme}: {len(only_readme)} rows not on the page, {len(only_page)} page rows missing; "
                            f"first: {first[:160]}")
        elif pairs != want:  # the same rows; a details entry (statement, rule, per-seed values, provenance) differs
            first = next(e for (_, e), (_, w) in zip(pairs, want) if e != w) if len(pairs) == len(want) else "(entries missing)"
            problems.append(f"{readme}: a details entry differs from the page's: {first[:160]}")
        summary = summary_problem(inner)
        if summary:
            problems.append(f"{readme}: {summary}")
    for p in problems:
        print(f"readme_claims: {p}", file=sys.stderr)
    print(f"readme_claims: {blocks} README blocks of profile {profile} against {page}: {len(problems)} differ", file=sys.stderr)
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("blocks", nargs="?")
    parser.add_argument("--against-page", metavar="PAGE", help="check the README blocks against this committed page")
    parser.add_argument("--profile", required=True)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--root", default=ROOT)
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "experiments")):
        parser.error(f"--root {args.root}: no experiments/ folder there")
    if not re.fullmatch(r"[a-z0-9_]+", args.profile):
        print(f"readme_claims: bad profile name {args.profile!r}", file=sys.stderr)
        return 2
    if args.against_page:
        if args.blocks or args.check:
            parser.error("--against-page takes no blocks file and no --check")
        if not os.path.isfile(os.path.join(root, args.against_page)):
            parser.error(f"--against-page {args.against_page}: no such file under {root}")
        try:
            return check_against_page(root, args.against_page, args.profile)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            print(f"readme_claims: {args.against_page}: {e}", file=sys.stderr)
            return 2
    if not args.blocks:
        parser.error("a blocks file (make_report.py's readme_blocks.json) is needed unless --against-page")
    try:
        with open(args.blocks, encoding="utf-8") as f:
            blocks = json.load(f)
        if not isinstance(blocks, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in blocks.items()):
            raise ValueError("not a mapping of README paths to blocks")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        parser.error(f"cannot read {args.blocks} (make_report.py's readme_blocks.json): {e}")
    stale = []
    for readme, block in sorted(blocks.items()):
        path = os.path.normpath(os.path.join(root, readme))
        if not path.startswith(os.path.join(root, "experiments") + os.sep) or not os.path.isfile(path):
            print(f"readme_claims: no experiment README {readme}; skipped", file=sys.stderr)
            continue
        with open(path) as f:
            text = f.read()
        try:
            new = replace_block(text, args.profile, block)
        except ValueError as e:
            print(f"readme_claims: {readme}: {e}", file=sys.stderr)
            return 2
        if new == text:
            continue
        stale.append(readme)
        if not args.check:
            atomic_write_text(path, new)  # a unique name beside the README, renamed over it
    verb = "differ from the report" if args.check else "updated"
    print(f"readme_claims: {len(blocks)} READMEs, {len(stale)} {verb}" + (": " + ", ".join(stale) if stale else ""), file=sys.stderr)
    return 1 if args.check and stale else 0  # a README that shows other claims than the page fails the check


if __name__ == "__main__":
    sys.exit(main())
