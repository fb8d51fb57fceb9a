"""The counts a page opens with: verdicts, by kind (paper claims apart from own checks; a claim is a paper claim only
when its source is a paper, claim_text.is_paper_claim), the spec's gates apart, the distinct measurements behind the
reproduced claims (claim_text.mark_shared_values), how many reproduced claims are robust, and how many rules were chosen
after the first runs, are fragile to one seed or depend on rounding."""
from claim_text import (PAPER_KINDS, PROVENANCE_MARK, chosen_after, column, depends_on_rounding, is_control, is_fragile,
                        is_paper_claim, is_robust, kind_of, mark_shared_values, measurement_of, unchecked)
from verdicts import VERDICTS

ROBUST_TEXT = "robust: hold without any one seed and under rounding"
UNCHECKED_TEXT = "without both checks (one value per instance of one draw, or no rounding twin)"
VERDICTS_TEXT = ("reproduced = the declared rule holds; not reproduced = it fails (a rule that needs every value fails on any value "
                 "outside it, whatever the mean: \"the rule needs every value\" under ours); inconclusive = the rule cannot decide "
                 "(one seed, an interval straddling its edge, a count against a mean whose whole interval disagrees); not run = no value at all "
                 "(e.g. a paired claim whose other arm never ran)")


def verdict_counts(claims):
    return {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}


def distinct_reproduced(claims):
    """How many distinct measurements the reproduced claims judge (two rules on one measurement count once)."""
    return len({measurement_of(c) for c in claims if c["verdict"] == "reproduced"})


def reproduced_text(claims, robust=False, explain=True, total=None):
    """'171 reproduced' ('171 of 230 reproduced' with total), led by the distinct measurements when some reproduced claims
    judge one measurement (fourth audit of issue 45: the headline counts each measurement once): '164 distinct
    measurements reproduced by 171 claims (7 of them a second rule on values another claim judges)'; robust=True adds
    '(42 robust: ...)' (claim_text.is_robust)."""
    counts = verdict_counts(claims)
    reproduced, of = counts["reproduced"], f" of {total}" if total is not None else ""
    distinct = distinct_reproduced(claims)
    notes = []
    if robust and reproduced:
        notes.append(f"{sum(is_robust(c) for c in claims)} " + (ROBUST_TEXT if explain else "robust"))
        missing = sum(unchecked(c) for c in claims)
        if missing:
            notes.append(f"{missing} " + (UNCHECKED_TEXT if explain else "unchecked"))
    if distinct < reproduced:
        head = (f"{distinct} distinct measurements reproduced by {reproduced}{of} claims ({reproduced - distinct} of them a "
                "second rule on values another claim judges)")
    else:
        head = f"{reproduced}{of} reproduced"
    return head + (f" ({'; '.join(notes)})" if notes else "")


def counts_text(claims):
    counts = verdict_counts(claims)
    return (f"{len(claims)} claims: {reproduced_text(claims)}, {counts['not reproduced']} not reproduced, "
            f"{counts['inconclusive']} inconclusive, {counts['not run']} not run")


def how_many(rows):
    """'36' as '33 claims, 3 spec gates' when gates are among the rows (the headline counts claims and gates apart)."""
    gates = sum(c.get("kind") == "spec gate" for c in rows)
    return f"{len(rows) - gates} claims, {gates} spec gates" if gates else str(len(rows))


def short_counts(claims, headline=False, explain=False):
    """'k of n reproduced' and the other verdicts that occur: a table heading's count; headline=True leads with the
    distinct measurements and adds the robust ones (reproduced_text)."""
    counts = verdict_counts(claims)
    rest = ", ".join(f"{counts[v]} {v}" for v in VERDICTS[1:] if counts[v])
    reproduced = (reproduced_text(claims, True, explain, total=len(claims)) if headline
                  else f"{counts['reproduced']} of {len(claims)} reproduced")
    return reproduced + (f", {rest}" if rest else "")


def paper_claims(claims):
    return [c for c in claims if is_paper_claim(c)]


def own_checks(claims):
    """Own checks without the negative controls (controls())."""
    return [c for c in claims if not is_paper_claim(c) and c.get("kind") != "spec gate" and not is_control(c)]


def controls(claims):
    return [c for c in claims if not is_paper_claim(c) and c.get("kind") != "spec gate" and is_control(c)]


def headline_items(claims, gates):
    """(label, text) lines of the headline. `claims` are the declared rows, `gates` the spec's gate rows."""
    distinct = mark_shared_values(claims)
    papers, own = paper_claims(claims), own_checks(claims)
    items = [("Paper claims", f"{short_counts(papers, headline=True, explain=True)}" + "".join(
        f"; {kind}: {short_counts([c for c in papers if c['kind'] == kind], headline=True)}" for kind in PAPER_KINDS
        if any(c["kind"] == kind for c in papers)))]
    not_paper = sum(kind_of(c) != c.get("kind") for c in own)
    items.append(("Own checks", (short_counts(own, headline=True) if own else "none")
                  + (f" (of them {not_paper} declared as paper kinds whose source is no paper)" if not_paper else "")))
    guards = controls(claims)
    if guards:
        items.append(("Negative controls", f"{short_counts(guards)} (reproduced: the control failed, so the exactness check "
                                           "it guards can fail; evidence about the checks, not a finding)"))
    shared = sum(bool(c.get("same_values_as")) for c in claims)
    if shared:
        items.append(("Measurements", f"{distinct + shared} claims with a value judge {distinct} distinct measurements: "
                                      f"{shared} apply a second rule to another claim's values (\"values of …\" under ours), "
                                      "so they are not independent evidence"))
    if gates:
        items.append(("Spec gates (computed from the rows)", short_counts(gates)))
    after = sum(chosen_after(c) for c in claims)
    with_loo = sum(bool(column(c, "leave_one_out")) for c in claims)
    with_rounding = sum(bool(column(c, "rounding")) for c in claims)
    items.append(("Robustness",
                  f"{after} rules chosen after the first runs ({PROVENANCE_MARK}); "
                  f"{sum(is_fragile(c) for c in claims)} fragile when one seed is left out (of {with_loo} with a leave-one-out "
                  f"check); {sum(depends_on_rounding(c) for c in claims)} depend on rounding (of {with_rounding} rerun "
                  "under another rounding)"))
    return items
