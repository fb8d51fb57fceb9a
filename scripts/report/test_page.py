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
assert "†" not in old_page.split("## Not reproduced")[1].split("<details><summary>How to read")[0]
# the key to the verdicts and columns is folded after the opening lists, not before them
assert old_page.index("## Not reproduced") < old_page.index("<details><summary>How to read the verdicts and the columns") \
    < old_page.index("Verdicts: reproduced = ")
assert "fragile" not in old_page.split("## Paper")[1]

page = page_of(new)
lines = page.splitlines()
# the headline: the verdicts, by kind with own checks apart, and robustness counted
assert "**5 claims: 2 reproduced, 1 not reproduced, 1 inconclusive, 1 not run.**" in page, page
# robust only where both checks were made and held; the identity over one draw's instances has neither: unchecked
assert ("- **Paper claims**: 2 of 3 reproduced (0 robust: hold without any one seed and under rounding; 1 without both "
        "checks (one value per instance of one draw, or no rounding twin)), 1 not reproduced; matches a printed number: 1 of "
        "1 reproduced (0 robust; 1 unchecked); reproduces a qualitative claim: 1 of 2 reproduced (0 robust), 1 not "
        "reproduced.") in page, page
assert "- **Own checks**: 0 of 2 reproduced, 1 inconclusive, 1 not run." in page, page
assert ("- **Robustness**: 1 rules chosen after the first runs (†); 1 fragile when one seed is left out (of 2 with a "
        "leave-one-out check); 1 depend on rounding (of 2 rerun under another rounding).") in page, page
# the failures come first, one line each: id, ours (a count), why (the team's reading; undecided: the rule's note), a
# link (the README section; the rule and the statement in full are in the claim's details)
first_table = next(i for i, line in enumerate(lines) if line.startswith("| claim |"))
failed = lines.index("## Not reproduced (1)")
undecided = lines.index("## Inconclusive or not run (2)")
assert failed < undecided < first_table, (failed, undecided, first_table)
assert lines[failed + 2] == ("- [**003-T1 LR SL-L2: ratio >= 1.5**](#c-003-t1-lr-sl-l2--ratio----1-5): ours 2/5 seeds; "
                             "*no reason recorded (docs/claim_reasons.yaml)* ([x](../experiments/x/README.md#claims))"), lines[failed + 2]
undecided_lines = lines[undecided + 2:undecided + 4]
assert undecided_lines[0].startswith("- [**002-T1 float32**](#c-002-t1-float32) exact dual (float32): ours 0.31 [-0.2, 0.8]; "
                                     "the interval straddles"), undecided_lines
assert undecided_lines[1].startswith("- [**VO-T never**](#c-vo-t-never) never ran: ours -"), undecided_lines
assert all(len(x) < 600 for x in lines[failed + 2:undecided] + undecided_lines), "the opening lists' lines stay short"
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
assert "a model without the effect passes only when its value is inside" in false_pass_text(ROWS[2])
# issue 45: a deterministic check (`iclab claims` column min_values 1: declared an identity on every value) is decided by one
# value, and says so instead of a coin's 50 %; over seeds the coin's rate is named an upper bound
identity = dict(ROWS[2], kind="own check", test="count_at_most", rule="x <= 1e-12 for every value", n="1", min_values="1")
assert false_pass_text(identity).startswith("deterministic: one value decides (declared an identity on every value;"), \
    false_pass_text(identity)
assert "coin would pass" not in false_pass_text(identity) and "50 %" not in false_pass_text(identity)
constructed = dict(ROWS[0], kind="own check", test="count_within", rule="0 <= x <= 1 for every value", min_values="1")
assert false_pass_text(constructed).startswith("deterministic: one value decides")
assert false_pass_text(constructed).endswith("; a fair coin would pass 5 of 5 seeds with 3.1 %, an upper bound"), \
    false_pass_text(constructed)  # a constructed model's bar over 5 seeds
# a trained claim (min_values 5) keeps the coin's rate; so does a CSV written before the column
assert false_pass_text(dict(constructed, min_values="5")) == "3.1 % (5 of 5 seeds by a fair coin)"
assert false_pass_text(dict(ROWS[0], rule="x > 0 for every value", min_values="5")) == "3.1 % (5 of 5 seeds by a fair coin)"
# a point band (x a pick among a grid, 003-A3's eta argmin = 1.6): the coin's rate is an upper bound, and says why
pick = dict(ROWS[0], kind="matches a printed number", test="count_within", rule="1.6 <= x <= 1.6 for every value", min_values="5")
assert false_pass_text(pick).startswith("<= 3.1 % (5 of 5 seeds by a fair coin), an upper bound for a pick by chance"), false_pass_text(pick)
assert not false_pass_text(dict(pick, rule="1.5 <= x <= 1.6 for every value")).startswith("<=")
# two claims on one measurement (the same setting, seeds and values): the second names the first, the headline counts
# distinct measurements (issue 45: each distinct measurement is one claim)
twin = dict(ROWS[0], id="003-T3 LR SL-L2: prefix < causal, second bar", rule="x > 0.1 for every value", verdict="not reproduced")
twin_page = "\n".join(claims_page_md([dict(r) for r in ROWS] + [twin], [], "../"))
assert "(values of 003-T3 LR SL-L2: prefix < causal)" in twin_page and "same values as: 003-T3 LR SL-L2: prefix < causal" in twin_page
assert "**Measurements**: 5 claims with a value judge 4 distinct measurements: 1 apply a second rule" in twin_page, twin_page
assert "**6 claims: 2 reproduced, 2 not reproduced" in twin_page, twin_page  # the twin is not reproduced
twin_ok = dict(twin, verdict="reproduced")
assert ("**6 claims: 2 distinct measurements reproduced by 3 claims (1 of them a second rule on values another claim judges), "
        "1 not reproduced") in "\n".join(
    claims_page_md([dict(r) for r in ROWS] + [twin_ok], [], "../")), "a duplicate is no independent evidence"
# an undecided claim that stays undecided without a seed or under rounding shows '-', not 'holds'
from claim_text import leave_one_out_short, rounding_short  # noqa: E402
assert leave_one_out_short(dict(ROWS[3], leave_one_out="holds")) == "-" and rounding_short(dict(ROWS[3], rounding="holds under rounding")) == "-"
assert leave_one_out_short(ROWS[1]) == "holds" and rounding_short(ROWS[1]) == "holds"
assert "false-pass rate: 2.5 % (one-sided" in page
print("page: failures first, compact tables, counts by kind, provenance, leave-one-out and rounding, verdict keys OK")

# the same measurement (issue 45, third audit): the same runs and values equal to the last bit, not tied; values that
# agree to 3 digits, other runs, or tied values of two quantities (two counts 0 on every seed) are not one measurement
from claim_text import mark_shared_values  # noqa: E402


def shared(rows):
    rows = [dict(r) for r in rows]
    return mark_shared_values(rows), [r.get("same_values_as", "") for r in rows]


F5 = dict(ROWS[0], id="004-F5 alpha=-0.1: final_ratio", values="1.98, 1.95, 1.97, 1.96, 1.92", mean="1.9555114485202387",
          ci95_low="1.9262171845566636", ci95_high="1.984805712483814")
F5_other = dict(F5, id="004-F5 alpha=-0.01: final_ratio", mean="1.9536632511548482", ci95_low="1.9239293257707273",
                ci95_high="1.983397176538969")  # equal 3-digit values, another arm
assert shared([F5, F5_other]) == (2, ["", ""])
assert shared([F5, dict(F5, id="004-F5 other seeds", units="1,2,3,4,5")]) == (2, ["", ""])  # other runs
assert shared([F5, dict(F5, id="004-F5 other setting", setting="configs/quick/y.yaml")]) == (2, ["", ""])
assert shared([F5, dict(F5, id="004-F5 second rule")]) == (1, ["", F5["id"]])  # an exact duplicate
zeros = dict(ROWS[0], id="003-A3 causal_ice_mse_increases", values="0, 0, 0, 0, 0", mean="0", ci95_low="0", ci95_high="0")
assert shared([zeros, dict(zeros, id="003-A6 fig2r_mse_increases_with_mu_violations")]) == (2, ["", ""])  # tied counts
tau = dict(ROWS[0], id="T4-6 prefix: tau", values="-1, -1, -1, -0.667, -1", mean="-0.93333333333333324")
assert shared([tau, dict(tau, id="T4-6 causal: tau")]) == (2, ["", ""])
# with the columns `iclab claims` writes now: the digest of the values' bits decides, ties by distinct_values
exact = dict(F5, values_digest="00000000000000aa", distinct_values="5")
assert shared([exact, dict(exact, id="second rule")]) == (1, ["", exact["id"]])
assert shared([exact, dict(exact, id="3-digit twin", values_digest="00000000000000ab")]) == (2, ["", ""])
assert shared([dict(exact, distinct_values="4"), dict(exact, id="tied", distinct_values="4")]) == (2, ["", ""])
instances = dict(ROWS[2], values_digest="0123456789abcdef", distinct_values="100")
assert shared([instances, dict(instances, id="000-T1 205K fp32: ICLCA exact", kind="own check")]) == (1, ["", ROWS[2]["id"]])
assert shared([dict(ROWS[2]), dict(ROWS[2], id="no digest, no values")]) == (2, ["", ""])  # instances: ties unknown
print("page: one measurement only for the same runs and bit-equal, tie-free values OK")

# paper claims name a paper as their source: our own hypotheses (issue 43) are own checks whatever kind they declare;
# robust = reproduced, and both checks made and held (leave-one-out, rounding)
from claim_text import is_paper_claim, is_robust, kind_short, unchecked  # noqa: E402
from counts import headline_items  # noqa: E402
hypothesis = dict(ROWS[0], id="decay-fade gamma=0.9", paper="issue 43", values="0.9, 0.8, 0.95, 0.85, 0.99",
                  leave_one_out="holds", rounding="holds under rounding", provenance="")
assert not is_paper_claim(hypothesis) and kind_short(hypothesis) == "own" and is_paper_claim(ROWS[0])
assert not is_paper_claim(dict(hypothesis, paper="beyond")) and is_paper_claim(dict(ROWS[0], paper="von Oswald 2023"))
items = dict(headline_items([dict(r) for r in new] + [hypothesis], []))
assert items["Paper claims"].startswith("2 of 3 reproduced"), items
assert items["Own checks"] == ("1 of 3 reproduced (1 robust), 1 inconclusive, 1 not run (of them 1 declared as paper kinds "
                               "whose source is no paper)"), items
# negative controls are counted apart from the own checks (second audit of issue 45)
control = dict(ROWS[2], id="002-T1 float64 control", kind="own check", paper="002",
               statement="the negative control of 002-T1 fails (float64)")
items = dict(headline_items([dict(r) for r in new] + [hypothesis, control], []))
assert items["Own checks"].startswith("1 of 3 reproduced"), items
assert items["Negative controls"].startswith("1 of 1 reproduced (reproduced: the control failed"), items
hyp_page = "\n".join(claims_page_md([dict(r) for r in new] + [hypothesis], [], "../"))
assert "| decay-fade gamma=0.9 |" in hyp_page and "| own | 4/5 seeds |" in hyp_page, hyp_page
assert "kind: own check (declared: reproduces a qualitative claim; it names no paper as its source)" in hyp_page
assert is_robust(dict(ROWS[0], leave_one_out="holds", rounding="holds under rounding")) and not is_robust(ROWS[0])  # fragile, depends
assert not is_robust(dict(ROWS[0], leave_one_out="holds", rounding="")) and unchecked(dict(ROWS[0], leave_one_out="holds", rounding=""))
assert not is_robust(dict(ROWS[0], leave_one_out="holds", rounding="depends on rounding: not reproduced at +1 ulp"))
assert not is_robust(ROWS[1])  # not reproduced
print("page: paper claims by source, own hypotheses as own checks, robust reproduced claims OK")

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

# Second audit of issue 45 (the quick page at 960b45b).
from claim_text import details_fields, ours_short  # noqa: E402
from page_md import LEGEND  # noqa: E402
from reasons import NO_REASON, load_reasons, reason_line  # noqa: E402

# (8) each not-reproduced claim's line gives the team's reading from docs/claim_reasons.yaml, with its link
known = row("002-T1 float32", "not reproduced", paper="002", kind="own check", test="count_at_most", rule="x <= 1 for every value",
            n="300", on_claimed_side="298", unit="instance", units="300 instances", values="")


def as_read(rows):
    with tempfile.TemporaryDirectory() as tmp:
        write_csv(os.path.join(tmp, "c.csv"), rows, BASE + NEW)
        return read_claims_csv(os.path.join(tmp, "c.csv"))


reasons_page = page_of(as_read([known] + ROWS[2:]))
reason_text_002, see_002 = load_reasons()["002-T1 float32"]
line_002 = next(x for x in reasons_page.splitlines() if x.startswith("- [**002-T1 float32**]"))
assert line_002.endswith(f"; *why: {reason_text_002}* ([why](../{see_002}))"), line_002
assert reason_line(dict(known, id="no such claim"), "../") == (NO_REASON, "")
html_reasons = claims_page_html(as_read([known] + ROWS[2:]), [], "file:///x/", lambda p: p)
assert f"<i>why: {reason_text_002}</i>" in html_reasons.replace("&#x27;", "'")
with tempfile.TemporaryDirectory() as tmp:  # a malformed file is refused, naming the claim
    with open(os.path.join(tmp, "r.yaml"), "w") as f:
        f.write("- ids: [a, b]\n  reason: r\n  see: x\n- ids: [a]\n  reason: r\n  see: x\n")
    try:
        load_reasons(os.path.join(tmp, "r.yaml"))
        raise AssertionError("a claim named twice was accepted")
    except ValueError as err:
        assert "claim 'a' has two entries" in str(err), err

# (7) the legend defines '-' (and empty) in both robustness columns; the details of an undecided claim whose twin stays
# undecided say what '-' means instead of a bare "holds under rounding"
assert "*-* for an undecided claim that stays undecided without any one seed" in LEGEND
assert "*-* for an undecided claim that stays undecided under it" in LEGEND
undecided_holds = dict(ROWS[3], leave_one_out="holds", rounding="holds under rounding")
fields = dict(details_fields(undecided_holds))
assert fields["rounding"] == ("- (inconclusive under the other rounding too: no decided verdict to hold; holds under "
                              "rounding)"), fields["rounding"]
assert fields["leave one seed out"].startswith("- (inconclusive without any one seed too"), fields
assert dict(details_fields(ROWS[1]))["rounding"] == "holds under rounding"  # a decided claim: as `iclab claims` wrote it

# (minor) a count rule's details show its count and mean, no t-interval (Kendall's tau's interval left [-1, 1])
tau = row("003-T4-6 LR: errors grow", "reproduced", test="count_at_most", rule="x <= -1 in >= 5/6 of the values, at least 5",
          mean="-0.9333", ci95_low="-1.118", ci95_high="-0.7482", on_claimed_side="5", values="-1, -1, -1, -0.667, -1")
tau_fields = dict(details_fields(tau))
assert tau_fields["mean"] == "-0.9333" and "mean [95 % t-interval]" not in tau_fields, tau_fields
assert "-1.118" not in " ".join(tau_fields.values())
assert "mean [95 % t-interval]" in dict(details_fields(ROWS[2]))  # an interval rule keeps its interval

# (3) a count verdict on the other side of its mean says so on its row
against = dict(ROWS[1], note="1 of 5 values on the claimed side (4 needed): the count decides; their mean 0.007844 is on "
               "the claimed side, but its 95 % interval [-0.01393, 0.02962] reaches out of it")
assert ours_short(against) == "2/5 seeds (mean on the other side: the count decides)", ours_short(against)
assert ours_short(ROWS[1]) == "2/5 seeds"

# (1) the HTML report's first screen: the failures above the navigation, one link per section (not one per run)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from make_report import SECTIONS, navigation_html  # noqa: E402


class FakeRun:
    def __init__(self, experiment, k):
        self.attrs = {"experiment": experiment}
        self.run_dir = f"/r/{experiment}_{k}"


runs = [FakeRun(name, k) for name, _, _ in SECTIONS for k in range(36)]  # 36 runs in each section
nav = navigation_html(new, runs)
section_links = nav.split("<b>Sections:</b>")[1].count("<a href=")
assert section_links == len(SECTIONS) and len(runs) == 36 * len(SECTIONS), section_links  # one link a section, not a run
assert nav.count('href="#section-') == len(SECTIONS)
with_nav = claims_page_html(new, [], "file:///x/", lambda p: p, nav)
assert with_nav.index('<h2 id="failures">') < with_nav.index("<nav>") < with_nav.index('<h2 id="undecided">'), "order"
assert with_nav.index("<nav>") < with_nav.index('<table class="claims">')
print("page: the second audit's items: reasons, '-' defined, counts without t-intervals, the count against its mean, "
      "one link per section below the failures OK")
