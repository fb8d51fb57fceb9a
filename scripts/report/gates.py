"""The spec's aggregate gates as claims of their own, computed from the per-cell rows (never written by hand).

Paper 003's spec (shared/specs/paper003.md §5, "What counts as reproduced", Part B) gates counts across cells that no
single declared claim states; experiments/prefix_vs_causal/README.md names the per-cell claims they read. A gate row
is "k of n reproduced -> verdict": reproduced when k reaches the bar, not reproduced when k cannot reach it even if
every undecided cell reproduced, inconclusive otherwise. A gate none of whose cells has a row in this report (a
profile that does not run Part B) is left out.
"""

TASKS = ("LR", "N-LR", "MC")
TABLE1_SETTINGS = ("UL-no-L2", "SL-L2")          # the Table 1 rows (Q16); Tables 4-7 use them too
TABLE3_SETTINGS = ("UL-no-L2", "UL-L2", "SL-no-L2", "SL-L2")
GATE_SETTING = "shared/specs/paper003.md §5"
GATE_README = "experiments/prefix_vs_causal/README.md#claims"


def _ratio_or_gap(task, setting):
    """A Table 1 cell: prefix < causal with MC a gap >= 1 point, regression a causal/prefix ratio >= 1.5 (§5 item 1).
    Table 1's rows are Table 3's SL-L2 and UL-no-L2 rows (the same runs), so this one claim is both tables' cell
    (issue 45, second audit: no second claim on the same values)."""
    return f"003-T1 {task} {setting}: " + ("gap >= 1 point" if task == "MC" else "ratio >= 1.5")


def _table3(task, setting):
    """A Table 3 cell, prefix < causal: "003-T3 ..." for the two settings only Table 3 has; for Table 1's rows (the same
    runs) the Table 1 claim's paired values judged by Table 3's own rule, x > 0 (ABOVE_ZERO: its bar 1.5 / 1 point is
    Table 1's, not Table 3's; second audit of issue 45, F3: the stricter bar had judged those cells)."""
    return (ABOVE_ZERO, _ratio_or_gap(task, setting)) if setting in TABLE1_SETTINGS else f"003-T3 {task} {setting}: prefix < causal"


ABOVE_ZERO = "x > 0"  # a cell member judged by the 95 % t-interval of its values' mean above 0 (above_zero_verdict)


def _float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def above_zero_verdict(row):
    """One claim row's values judged by "95 % t-interval of the mean > 0" (claims.hpp's interval rule): inconclusive
    below the row's floor of values (min_values) or with a non-finite bound, not run without values, reproduced when the
    interval lies above 0, not reproduced when it lies below, else inconclusive."""
    if row["verdict"] == "not run":
        return "not run"
    n, floor = _float(row.get("n")), _float(row.get("min_values") or "2")
    low, high = _float(row.get("ci95_low")), _float(row.get("ci95_high"))
    if not n >= max(2.0, floor) or low != low or high != high:
        return "inconclusive"
    if low > 0:
        return "reproduced"
    if high < 0:
        return "not reproduced"
    return "inconclusive"


def _member(entry):
    """(rule, id) of a cell member: ABOVE_ZERO for a row judged by x > 0, None for its own verdict."""
    return entry if isinstance(entry, tuple) else (None, entry)


# The one place that maps the spec's gates to claim ids. Each gate: (id, source in the spec, statement, cells, needed);
# a cell is (label, members) and is reproduced when every row of every member is; a member is a claim id (its rows'
# verdicts) or (ABOVE_ZERO, id) (its rows judged by x > 0).
SPEC_GATES = [
    # §5 item 1: "prefix < causal in all 6", regression cells also ratio >= 1.5, MC cells also a gap >= 1 point
    ("003-gate Table 1: all 6 cells", "spec §5 item 1",
     "prefix < causal in all 6 Table 1 cells, with a causal/prefix ratio >= 1.5 (regression) or a gap >= 1 point (MC)",
     [(f"{t} {s}", [_ratio_or_gap(t, s)]) for t in TASKS for s in TABLE1_SETTINGS], 6),
    # §5 item 2: "Table 3 (12 comparisons): prefix < causal in >= 10/12"
    ("003-gate Table 3: >= 10 of 12", "spec §5 item 2", "prefix < causal in >= 10 of the 12 Table 3 cells",
     [(f"{t} {s}", [_table3(t, s)]) for t in TASKS for s in TABLE3_SETTINGS], 10),
    # §5 item 3: "Tables 4-6 (18 comparisons): prefix < causal in >= 14/18"
    ("003-gate Tables 4-6: >= 14 of 18", "spec §5 item 3", "prefix < causal in >= 14 of the 18 cells of Tables 4-6",
     [(f"{t} {s} k={k}", [f"003-T4-6 {t} {s} k={k}: prefix < causal"]) for t in TASKS for s in TABLE1_SETTINGS
      for k in (4, 6, 8)], 14),
    # §5 item 3: "Errors must grow as k shrinks, for both masks"
    ("003-gate Tables 4-6: errors grow, both masks", "spec §5 item 3", "errors grow as k shrinks, for both masks, in every cell",
     [(f"{t} {s} {m}", [f"003-T4-6 {t} {s} {m}: errors grow as k shrinks"]) for t in TASKS for s in TABLE1_SETTINGS
      for m in ("prefix", "causal")], 12),
    # §5 item 4: "prefix <= causal in >= 4/6 cells" and "permuted causal <= unpermuted causal in >= 4/6 cells"
    ("003-gate Table 7: prefix <= causal, >= 4 of 6", "spec §5 item 4", "trained with permuted ICEs, prefix <= causal in >= 4 of 6 cells",
     [(f"{t} {s}", [f"003-T7 {t} {s} permuted: prefix <= causal"]) for t in TASKS for s in TABLE1_SETTINGS], 4),
    ("003-gate Table 7: permuted causal, >= 4 of 6", "spec §5 item 4", "permuted causal <= unpermuted causal in >= 4 of 6 cells",
     [(f"{t} {s}", [f"003-T7 {t} {s} causal: permuted <= unpermuted"]) for t in TASKS for s in TABLE1_SETTINGS], 4),
]


def cell_verdict(rows, rule=None):
    """One cell from its rows: not run when a member has no row, else the worst of its rows' verdicts (rule ABOVE_ZERO:
    each row's values judged by x > 0 instead of its own rule)."""
    verdicts = [above_zero_verdict(r) if rule == ABOVE_ZERO else r["verdict"] for r in rows]
    for v in ("not reproduced", "not run", "inconclusive"):
        if v in verdicts:
            return v
    return "reproduced"


def gate_verdict(cells, needed):
    """(k reproduced, verdict) of a count over cell verdicts: decided as soon as the undecided cells cannot change it."""
    k = sum(v == "reproduced" for v in cells)
    undecided = sum(v in ("inconclusive", "not run") for v in cells)
    if k >= needed:
        return k, "reproduced"
    if k + undecided < needed:
        return k, "not reproduced"
    return k, "inconclusive"


def gate_claims(claims, gates=SPEC_GATES):
    """The gate rows of these claims (dicts shaped like claim rows, kind 'spec gate')."""
    by_id = {}
    for c in claims:
        by_id.setdefault(c["id"], []).append(c)
    out = []
    for gid, source, statement, cells, needed in gates:
        if not any(_member(e)[1] in by_id for _, ids in cells for e in ids):
            continue
        verdicts = []
        for _, ids in cells:
            members = [_member(e) for e in ids]
            missing = any(i not in by_id for _, i in members)
            cell = [cell_verdict(by_id.get(i, []), rule) for rule, i in members] if not missing else []
            verdicts.append("not run" if missing else cell_verdict([{"verdict": v} for v in cell]))
        k, verdict = gate_verdict(verdicts, needed)
        n = len(cells)
        bar = f"all {n}" if needed == n else f">= {needed} of {n}"
        members = "; ".join(f"{label}: {v}" for (label, _), v in zip(cells, verdicts))
        undecided = sum(v in ("inconclusive", "not run") for v in verdicts)
        out.append({"setting": GATE_SETTING, "experiment": "prefix_vs_causal", "paper": "003", "id": gid, "source": source,
                    "kind": "spec gate", "statement": statement, "metric": "cells reproduced (each cell's verdicts in this report)",
                    "rule": f"{bar} cells reproduced", "unit": "cell", "units": f"{n} cells", "n": str(n), "mean": str(k),
                    "ci95_low": "nan", "ci95_high": "nan", "on_claimed_side": str(k), "paper_value": "nan",
                    "verdict": verdict, "note": f"{k} of {n} reproduced, {undecided} undecided" if undecided else "",
                    "readme": GATE_README, "test": "gate", "values": "", "ours": f"{k} of {n} reproduced",
                    "members": members, "key": f"{GATE_SETTING} :: {gid}"})
    return out
