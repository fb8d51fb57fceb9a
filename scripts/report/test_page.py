"""ctest report_page: the page read in a minute, from constructed claims CSVs. It opens with the claims that do not
reproduce (then the undecided ones), one line each with ours, the rule, the note and the README; compact per-paper
tables follow, with the rest folded in <details>; count rules show counts, not t-intervals; the headline counts by kind
(own checks apart) and counts the rules chosen after the first runs, the fragile ones and those that depend on
rounding; the columns provenance / leave_one_out / rounding read as empty when the CSV has none; the verdict keys of
the new layout parse (scripts/reproduce.sh --check)."""
import csv
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from page_html import claims_page_html  # noqa: E402
from page_md import claims_page_md, reproduction_page  # noqa: E402
from verdicts import compare, parse_verdict_keys, read_claims_csv  # noqa: E402

BASE = ["setting", "experiment", "runs", "paper", "id", "source", "kind", "statement", "metric", "rule", "unit", "units", "n",
        "mean", "ci95_low", "ci95_high", "on_claimed_side", "paper_value", "verdict", "note", "readme", "test", "values"]
NEW = ["provenance", "leave_one_out", "rounding", "excluded"]
EXCLUDED = "seed 2: ICL accuracy of the model with the prompt on 200 validation pairs 0.41 < 0.9 (iclaa.precondition.min_icl_accuracy)"


def row(cid, verdict, **kw):
    r = {"setting": "configs/quick/x.yaml", "experiment": "x", "runs": "3", "paper": "003", "id": cid, "source": "Table 1",
         "kind": "reproduces a qualitative claim", "statement": "prefix < causal: prefixLM query MSE < causalLM (LR, SL-L2) in "
         "most seeds, with a long tail that the compact table cuts", "metric": "ln(causal / prefix)",
         "rule": "x > 0 in >= 4/5 of the values, at least 4", "unit": "seed", "units": "0,1,2,3,4", "n": "5", "mean": "0.31",
         "ci95_low": "-0.2", "ci95_high": "0.8", "on_claimed_side": "4", "paper_value": "nan", "verdict": verdict, "note": "",
         "readme": "experiments/x/README.md#claims", "test": "count_above", "values": "0.1, 0.5, 0.9, 0.4, -0.3"}
    r.update(kw)
    return r


ROWS = [
    row("003-T3 LR SL-L2: prefix < causal", "reproduced", provenance="chosen after the first runs (2026-11-20): bar 1.5 after seed 0",
        leave_one_out="fragile: without seed 1 -> not reproduced", rounding="depends on rounding: not reproduced at +1 ulp"),
    row("003-T1 LR SL-L2: ratio >= 1.5", "not reproduced", on_claimed_side="2", note="2 of 5 values on the claimed side",
        values="0.2, 0.6, -0.9, -0.4, -0.3",
        leave_one_out="holds", rounding="holds under rounding"),
    row("000-T1 205K fp32", "reproduced", paper="000", kind="matches a printed number", test="interval_within", paper_value="2.9e-07",
        rule="95 % t-interval of the mean inside [9.667e-08, 8.7e-07]", unit="instance", units="100 instances", n="100",
        mean="2.823e-07", ci95_low="2.806e-07", ci95_high="2.840e-07", values="", statement="mean error as printed"),
    row("002-T1 float32", "inconclusive", paper="002", kind="own check", note="the interval straddles the rule's edge",
        test="interval_above", rule="95 % t-interval of the mean > 0.99", statement="exact dual (float32)", excluded=EXCLUDED,
        values="0.3, 0.1, 0.7, 0.2, 0.25"),
    row("VO-T never", "not run", paper="von Oswald 2023", kind="own check", n="0", units="", values="", mean="nan",
        ci95_low="nan", ci95_high="nan", on_claimed_side="0", note="no value", statement="never ran"),
]


def write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def page_of(rows):
    gates = []  # the gates of these rows (Table 1 and 3, undecided) are test_gates.py's
    return reproduction_page(rows, gates, [("machine", "test")], "T", "quick", [], [("s", "configs/quick/x.yaml", "0", "1", "")])


with tempfile.TemporaryDirectory() as tmp:
    # the results of today: no provenance, leave_one_out or rounding column
    write_csv(os.path.join(tmp, "old.csv"), ROWS, BASE)
    old = read_claims_csv(os.path.join(tmp, "old.csv"))
    write_csv(os.path.join(tmp, "new.csv"), ROWS, BASE + NEW)
    new = read_claims_csv(os.path.join(tmp, "new.csv"))

old_page = page_of(old)
assert "- **Robustness**: 0 rules chosen after the first runs (†); 0 fragile when one seed is left out (of 0 with a " \
       "leave-one-out check); 0 depend on rounding (of 0 rerun under another rounding)." in old_page, old_page
assert "†" not in old_page.split("## Not reproduced")[1].split("<!-- verdict keys")[0]
assert "fragile" not in old_page.split("## Paper")[1]

page = page_of(new)
lines = page.splitlines()
# the headline: the verdicts, by kind with own checks apart, and robustness counted
assert "**5 claims: 2 reproduced, 1 not reproduced, 1 inconclusive, 1 not run.**" in page, page
assert ("- **Paper claims**: 2 of 3 reproduced, 1 not reproduced; matches a printed number: 1 of 1 reproduced; "
        "reproduces a qualitative claim: 1 of 2 reproduced, 1 not reproduced.") in page, page
assert "- **Own checks**: 0 of 2 reproduced, 1 inconclusive, 1 not run." in page, page
assert ("- **Robustness**: 1 rules chosen after the first runs (†); 1 fragile when one seed is left out (of 2 with a "
        "leave-one-out check); 1 depend on rounding (of 2 rerun under another rounding).") in page, page
# the failures come first, one line each: id, ours (a count), the rule, the note, the README section
first_table = next(i for i, line in enumerate(lines) if line.startswith("| claim |"))
failed = lines.index("## Not reproduced (1)")
undecided = lines.index("## Inconclusive or not run (2)")
assert failed < undecided < first_table, (failed, undecided, first_table)
assert lines[failed + 2] == ("- [**003-T1 LR SL-L2: ratio >= 1.5**](#c-003-t1-lr-sl-l2--ratio----1-5): ours 2/5 seeds, rule "
                             "`x > 0 in >= 4/5 of the values, at least 4`; 2 of 5 values on the claimed side "
                             "([x](../experiments/x/README.md#claims))"), lines[failed + 2]
undecided_lines = lines[undecided + 2:undecided + 4]
assert undecided_lines[0].startswith("- [**002-T1 float32**](#c-002-t1-float32) exact dual (float32): ours 0.31 [-0.2, 0.8], "
                                     "rule `95 % t-interval of the mean > 0.99`; the interval straddles"), undecided_lines
assert undecided_lines[1].startswith("- [**VO-T never**](#c-vo-t-never) never ran: ours -, rule"), undecided_lines
# compact rows: a count rule its count, an interval rule its interval, the printed value; provenance marked with †
assert ("| 003-T3 LR SL-L2: prefix < causal† | prefix < causal: prefixLM query MSE < causalLM (LR, SL-L2)… | qualitative | 4/5 seeds "
        "|  | reproduced | fragile | depends |") in lines, [x for x in lines if x.startswith("| 003-T3")]
assert "| 003-T1 LR SL-L2: ratio >= 1.5 | prefix < causal: prefixLM query MSE < causalLM (LR, SL-L2)… | qualitative | 2/5 seeds |  " \
       "| **not reproduced** | holds | holds |" in lines
assert ("| 000-T1 205K fp32 | mean error as printed | printed | 2.823e-07 [2.806e-07, 2.840e-07] | 2.900e-07 | reproduced "
        "|  |  |") in lines
table_rows = [x for x in lines if x.startswith("| ") and not x.startswith("| claim |")]
assert not any("0.1, 0.5" in x or "t-interval" in x for x in table_rows)  # per-seed values and rules are folded
# the details: everything folded, the provenance text with its date and reason, the anchors the failures link to
details = [x for x in lines if x.startswith('- <a id="c-003-t3-lr-sl-l2--prefix---causal"></a>')]
assert len(details) == 1 and "† provenance: chosen after the first runs (2026-11-20): bar 1.5 after seed 0" in details[0], details
assert "per seed: 0.1, 0.5, 0.9, 0.4, -0.3" in details[0] and "leave one seed out: fragile: without seed 1" in details[0]
assert "rounding: depends on rounding: not reproduced at +1 ulp" in details[0]
# a seed left out by its precondition (column excluded): on the undecided line after the note, and in the details
assert undecided_lines[0].endswith("; the interval straddles the rule's edge; excluded (precondition not met): " + EXCLUDED + " ([x](../experiments/x/README.md#claims))"), undecided_lines
excluded_details = [x for x in lines if x.startswith('- <a id="c-002-t1-float32"></a>')]
assert len(excluded_details) == 1 and "excluded seeds (precondition not met): " + EXCLUDED in excluded_details[0], excluded_details
assert "excluded" not in old_page.split("## Paper")[0].split("## Not reproduced")[1]  # no column: nothing shown
for anchor in re.findall(r"\]\(#(c-[^)]*)\)", page):
    assert f'<a id="{anchor}"></a>' in page, anchor
assert page.count("<details>") == page.count("</details>") >= 4
# the verdict keys of the new layout: one per claim, parsed by scripts/reproduce.sh --check
keys = parse_verdict_keys(page)
assert keys == {f"configs/quick/x.yaml :: {r['id']}": r["verdict"] for r in ROWS}, keys
changed = [dict(r, verdict="reproduced") if r["id"] == "003-T1 LR SL-L2: ratio >= 1.5" else r for r in new]
assert compare(keys, parse_verdict_keys(page_of(changed))) == [
    "configs/quick/x.yaml :: 003-T1 LR SL-L2: ratio >= 1.5: committed not reproduced, now reproduced"]
# the HTML: the same order (failures, then tables), the mark and the short forms
html_page = claims_page_html(new, [], "file:///x/", lambda p: p.replace(" ", "-"))
assert html_page.index('<h2 id="failures">') < html_page.index('<h2 id="undecided">') < html_page.index('<table class="claims">')
assert ">003-T3 LR SL-L2: prefix &lt; causal†</a>" in html_page and "<td class=\"l\">fragile</td>" in html_page
assert '<tr id="c-003-t3-lr-sl-l2--prefix---causal">' in html_page
# the false-pass rate beside each rule (issue 45: rules a coin cannot pass)
from claim_text import false_pass_text  # noqa: E402
assert false_pass_text(dict(ROWS[0], rule="x > 0 in >= 4/5 of the values, at least 4 (here 4 of 5)")) == \
    "19 % (4 of 5 seeds by a fair coin)"  # P(Bin(5, 1/2) >= 4) = 6/32
assert false_pass_text(dict(ROWS[0], rule="x > 0 for every value")) == "3.1 % (5 of 5 seeds by a fair coin)"
assert false_pass_text(ROWS[2]).startswith("<= 2.5 %") and false_pass_text(ROWS[3]).startswith("2.5 %")
assert false_pass_text(dict(ROWS[2], test="count_at_most", rule="x <= 1e-05 for every value")) == \
    "< 0.01 % (100 of 100 instances by a fair coin)"  # an identity over 100 instances
assert false_pass_text(dict(ROWS[2], test="count_below", rule="x < 0 for every value", n="2")) == \
    "25 % (2 of 2 instances by a fair coin)"  # a timing on 2 instances is no identity
assert "a model with no effect passes" in false_pass_text(ROWS[2])
# two claims on one measurement (the same setting, seeds and values): the second names the first, the headline counts
# distinct measurements (issue 45: each distinct measurement is one claim)
twin = dict(ROWS[0], id="003-T3 LR SL-L2: prefix < causal, second bar", rule="x > 0.1 for every value", verdict="not reproduced")
twin_page = "\n".join(claims_page_md([dict(r) for r in ROWS] + [twin], [], "../"))
assert "(values of 003-T3 LR SL-L2: prefix < causal)" in twin_page and "same values as: 003-T3 LR SL-L2: prefix < causal" in twin_page
assert "**Measurements**: 5 claims with a value judge 4 distinct measurements: 1 apply a second rule" in twin_page, twin_page
# an undecided claim that stays undecided without a seed or under rounding shows '-', not 'holds'
from claim_text import leave_one_out_short, rounding_short  # noqa: E402
assert leave_one_out_short(dict(ROWS[3], leave_one_out="holds")) == "-" and rounding_short(dict(ROWS[3], rounding="holds under rounding")) == "-"
assert leave_one_out_short(ROWS[1]) == "holds" and rounding_short(ROWS[1]) == "holds"
assert "false-pass rate: 2.5 % (one-sided" in page
print("page: failures first, compact tables, counts by kind, provenance, leave-one-out and rounding, verdict keys OK")

# the sentence under the title that names the commit computing every number (issue 46, make_report.record_sentence)
import subprocess  # noqa: E402
from make_report import record_sentence  # noqa: E402


class FakeRun:
    def __init__(self, commit, dirty):
        self.attrs = {"git_commit": commit, "git_dirty": "true" if dirty else "false"}


head = subprocess.run(["git", "-C", os.path.dirname(__file__), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
if head:  # a checkout (not an exported tarball)
    at_head = record_sentence([FakeRun(head, False)] * 3)
    assert at_head.startswith(f"Every number below is what commit {head[:7]} computes: 3 runs at {head[:7]} ("), at_head
    dirty = record_sentence([FakeRun(head, False), FakeRun(head, True)])
    assert dirty.startswith("**Not one commit of record:** 1 run at " + head[:7] + " (dirty tree)"), dirty
    unknown = record_sentence([FakeRun("0" * 40, False)])  # a commit whose fingerprints git cannot show: not HEAD's bits
    assert unknown.startswith("**Not one commit of record:** 1 run at 0000000"), unknown
    # (runs judged by their own families: scripts/report/test_families.py, on a repository made there)
print("page: the commit of record named, dirty and foreign commits flagged OK")
