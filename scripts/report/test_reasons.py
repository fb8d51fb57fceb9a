"""ctest report_reasons: the team's reading of why a claim does not reproduce (docs/claim_reasons.yaml, issue 45: the
page "opens with the claims that do not reproduce, one line each with its reason and link").

    test_reasons.py PAGE...   every claim each committed PAGE calls "not reproduced" (its verdict keys) has an entry,
                              and each entry's `see` file exists; exit 1 listing what is missing

The page prints "no reason recorded" for a claim without one (test_page.py), so a regenerated page with a new
not-reproduced claim fails here until its reading is written."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from reasons import ROOT, load_reasons  # noqa: E402
from verdicts import parse_verdict_keys  # noqa: E402


def main():
    pages = sys.argv[1:]
    if not pages or any(p.startswith("-") or not os.path.isfile(p) for p in pages):
        print("usage: test_reasons.py PAGE...  (committed reproduction pages)", file=sys.stderr)
        return 2
    reasons = load_reasons()
    problems = []
    for cid, (reason, see) in sorted(reasons.items()):
        if not os.path.isfile(os.path.join(ROOT, see.split("#")[0])):
            problems.append(f"claim '{cid}': its see {see} is no file of the checkout")
        if len(reason) < 40:
            problems.append(f"claim '{cid}': a reason of {len(reason)} characters is no reading")
    failed = 0
    for page in pages:
        with open(page) as f:
            keys = parse_verdict_keys(f.read())
        for key, verdict in sorted(keys.items()):
            if verdict != "not reproduced":
                continue
            failed += 1
            cid = key.split(" :: ", 1)[1]
            if cid not in reasons:
                problems.append(f"{page}: '{cid}' is not reproduced and has no entry in docs/claim_reasons.yaml")
    for line in problems:
        print("test_reasons: " + line, file=sys.stderr)
    print(f"test_reasons: {failed} not-reproduced claims on {len(pages)} page(s), {len(reasons)} reasons, "
          f"{len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
