"""ctest report_gates: paper 003's spec gates (shared/specs/paper003.md §5) computed from the per-cell rows: Table 3's
">= 10 of 12" passes at 10 and fails at 9, an undecided cell leaves it inconclusive only while it could still tip it;
a Table 1 cell is its one ratio / gap row, and Table 3's cell of the same runs is that row judged by x > 0 (its 95 %
interval above 0, the floor kept); a missing one is "not run"; a profile without
Part B gets no gate rows; the gates reach the page's opening list and its verdict keys."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gates import SPEC_GATES, TABLE1_SETTINGS, TABLE3_SETTINGS, TASKS, gate_claims, gate_verdict  # noqa: E402
from page_md import reproduction_page  # noqa: E402
from verdicts import parse_verdict_keys  # noqa: E402


# a row's interval agrees with its verdict (Table 3's cells of Table 1's rows are judged by x > 0 on it)
INTERVAL = {"reproduced": ("0.5", "2"), "not reproduced": ("-2", "-0.5"), "inconclusive": ("-1", "1"), "not run": ("nan", "nan")}


def claim(cid, verdict, interval=None):
    low, high = interval or INTERVAL[verdict]
    return {"setting": "configs/quick/prefix_vs_causal.yaml", "paper": "003", "id": cid, "verdict": verdict, "kind":
            "reproduces a qualitative claim", "statement": "s", "rule": "95 % t-interval of the mean > 0", "source": "Table 3",
            "readme": "experiments/prefix_vs_causal/README.md#claims", "test": "interval_above", "unit": "seed",
            "units": "0,1,2,3,4", "n": "5", "on_claimed_side": "3", "mean": "1", "ci95_low": low, "ci95_high": high,
            "paper_value": "nan", "min_values": "5", "key": f"configs/quick/prefix_vs_causal.yaml :: {cid}"}


def table1_id(t, s):
    return f"003-T1 {t} {s}: " + ("gap >= 1 point" if t == "MC" else "ratio >= 1.5")


table3 = [table1_id(t, s) if s in TABLE1_SETTINGS else f"003-T3 {t} {s}: prefix < causal" for t in TASKS for s in TABLE3_SETTINGS]
assert len(table3) == 12 and len({g[0] for g in SPEC_GATES}) == len(SPEC_GATES)


def gate(rows, gid):
    return next(g for g in gate_claims(rows) if g["id"] == gid)


def table3_with(verdicts):
    return [claim(cid, v) for cid, v in zip(table3, verdicts)]


T3 = "003-gate Table 3: >= 10 of 12"
g = gate(table3_with(["reproduced"] * 10 + ["not reproduced"] * 2), T3)
assert (g["verdict"], g["ours"], g["rule"]) == ("reproduced", "10 of 12 reproduced", ">= 10 of 12 cells reproduced"), g
g = gate(table3_with(["reproduced"] * 9 + ["not reproduced"] * 3), T3)
assert (g["verdict"], g["ours"]) == ("not reproduced", "9 of 12 reproduced"), g
g = gate(table3_with(["reproduced"] * 9 + ["inconclusive", "not reproduced", "not reproduced"]), T3)
assert g["verdict"] == "inconclusive" and g["note"] == "9 of 12 reproduced, 1 undecided", g  # the undecided cell could tip it
g = gate(table3_with(["reproduced"] * 8 + ["inconclusive"] + ["not reproduced"] * 3), T3)
assert g["verdict"] == "not reproduced", g                                                  # 8 + 1 < 10: decided
g = gate(table3_with(["reproduced"] * 11), T3)                                             # one cell has no row at all
assert g["verdict"] == "reproduced" and "MC SL-L2: not run" in g["members"], g
assert gate_verdict(["reproduced"] * 6, 6) == (6, "reproduced") and gate_verdict(["reproduced"] * 5 + ["not run"], 6)[1] == "inconclusive"

# Table 1: a cell is its one ratio (regression) / gap (MC) row, which Table 3's gate reads for the same cell
T1 = "003-gate Table 1: all 6 cells"
rows = [claim(table1_id(t, s), "reproduced") for t in TASKS for s in ("UL-no-L2", "SL-L2")]
assert gate(rows, T1)["verdict"] == "reproduced"
rows[0] = claim(rows[0]["id"], "not reproduced")  # LR UL-no-L2's ratio fails below 0 too: its cell fails in both gates
g = gate(rows, T1)
assert (g["verdict"], g["ours"]) == ("not reproduced", "5 of 6 reproduced") and "LR UL-no-L2: not reproduced" in g["members"], g
assert "LR UL-no-L2: not reproduced" in gate(rows, T3)["members"]
# Table 3 judges Table 1's rows by its own rule, x > 0 (second audit of issue 45, F3), not by the ratio's 1.5 bar: a row
# whose ratio misses 1.5 with an interval above 0 is a reproduced Table 3 cell; one straddling 0 an undecided one
rows[0] = claim(rows[0]["id"], "not reproduced", ("0.1", "0.3"))
assert "LR UL-no-L2: not reproduced" in gate(rows, T1)["members"] and "LR UL-no-L2: reproduced" in gate(rows, T3)["members"]
rows[0] = claim(rows[0]["id"], "not reproduced", ("-0.66", "0.40"))
assert "LR UL-no-L2: inconclusive" in gate(rows, T3)["members"]
rows[0] = claim(rows[0]["id"], "inconclusive", ("0.13", "0.89"))  # inconclusive on 1.5, above 0
assert "LR UL-no-L2: reproduced" in gate(rows, T3)["members"]
rows[0] = dict(claim(rows[0]["id"], "inconclusive", ("0.5", "2")), n="4")  # below the floor of 5: undecided
assert "LR UL-no-L2: inconclusive" in gate(rows, T3)["members"]
rows[0] = claim(rows[0]["id"], "inconclusive", ("nan", "2"))  # a non-finite bound: undecided
assert "LR UL-no-L2: inconclusive" in gate(rows, T3)["members"]
assert gate(rows[:-1], T1)["members"].endswith("MC SL-L2: not run")  # MC SL-L2's gap row missing
# the fallback rows of the paper profile are other claims: they do not stand for the cells
fallback = [dict(r, id=r["id"] + " (with triggered fallback)") for r in rows]
assert T1 not in {g["id"] for g in gate_claims(fallback)}
# no Part B rows: no gates
assert gate_claims([claim("000-T1 205K fp32", "reproduced")]) == []

# on the page: a failed gate opens the page with the failures, and is a verdict key of its own
rows = table3_with(["reproduced"] * 9 + ["not reproduced"] * 3)
gates = gate_claims(rows)
page = reproduction_page(rows, gates, [], "T", "quick", [], [])
head = page.split("## Paper 003")[0]
assert "[**003-gate Table 3: >= 10 of 12**](#c-003-gate-table-3-----10-of-12): ours 9 of 12 reproduced; " in head, head  # the bar in its id
assert "| 003-gate Table 3: >= 10 of 12 | prefix < causal in >= 10 of the 12 Table 3 cells | gate | 9 of 12 reproduced |  | **not reproduced** |" in page
# Table 1's gate is there too (its cells are Table 3's Table-1 rows), decided by the 3 failed cells among them
assert "- **Spec gates (computed from the rows)**: 0 of 2 reproduced, 2 not reproduced." in page, page
assert "**12 claims: 9 reproduced, 3 not reproduced, 0 inconclusive, 0 not run.**" in page  # gates counted apart
assert parse_verdict_keys(page)["shared/specs/paper003.md §5 :: " + T3] == "not reproduced"
print("gates: counted from the rows, decided only when the undecided cells cannot tip them, on the page and in its keys")
