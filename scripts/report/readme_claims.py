"""Each experiment README's generated claims block: the rows of the latest report for the claims that README explains.

make_report.py writes OUT/readme_blocks.json ({README path: its rows}); scripts/reproduce.sh then puts each block
between the README's markers `<!-- claims:PROFILE -->` and `<!-- /claims:PROFILE -->` (a section appended at the end
when the README has none yet), so the measured claims a README shows are the report's, at the report's commit, and
the README says in its own words which claims are not reproduced.

  readme_claims.py OUT/readme_blocks.json --profile quick            write the blocks
  readme_claims.py OUT/readme_blocks.json --profile quick --check    only list the READMEs whose block differs
  --root DIR: the checkout whose experiments/*/README.md are meant (default: this script's checkout)

Exit status: 0 written, or (--check) every block equals the report's; 1 (--check) a README's block differs from the
report's (or is missing), listed on stderr; 2 bad arguments, an unreadable blocks file or broken markers.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("blocks")
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
