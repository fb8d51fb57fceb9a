"""The counts a page opens with: verdicts, by kind (paper claims apart from own checks), the spec's gates apart, and
how many rules were chosen after the first runs, are fragile to one seed or depend on rounding."""
from claim_text import PROVENANCE_MARK, chosen_after, column, depends_on_rounding, is_fragile, mark_shared_values
from verdicts import VERDICTS

PAPER_KINDS = ("matches a printed number", "reproduces a qualitative claim")
VERDICTS_TEXT = ("reproduced = the declared rule holds; not reproduced = it fails; inconclusive = the rule cannot decide "
                 "(one seed, an interval straddling its edge, a count and a mean that disagree); not run = no value at all "
                 "(e.g. a paired claim whose other arm never ran)")


def verdict_counts(claims):
    return {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}


def counts_text(claims):
    counts = verdict_counts(claims)
    return (f"{len(claims)} claims: {counts['reproduced']} reproduced, {counts['not reproduced']} not reproduced, "
            f"{counts['inconclusive']} inconclusive, {counts['not run']} not run")


def how_many(rows):
    """'36' as '33 claims, 3 spec gates' when gates are among the rows (the headline counts claims and gates apart)."""
    gates = sum(c.get("kind") == "spec gate" for c in rows)
    return f"{len(rows) - gates} claims, {gates} spec gates" if gates else str(len(rows))


def short_counts(claims):
    """'k of n reproduced' and the other verdicts that occur: a table heading's count."""
    counts = verdict_counts(claims)
    rest = ", ".join(f"{counts[v]} {v}" for v in VERDICTS[1:] if counts[v])
    return f"{counts['reproduced']} of {len(claims)} reproduced" + (f", {rest}" if rest else "")


def paper_claims(claims):
    return [c for c in claims if c.get("kind") in PAPER_KINDS]


def own_checks(claims):
    return [c for c in claims if c.get("kind") not in PAPER_KINDS and c.get("kind") != "spec gate"]


def headline_items(claims, gates):
    """(label, text) lines of the headline. `claims` are the declared rows, `gates` the spec's gate rows."""
    papers = paper_claims(claims)
    items = [("Paper claims", f"{short_counts(papers)}" + "".join(
        f"; {kind}: {short_counts([c for c in papers if c['kind'] == kind])}" for kind in PAPER_KINDS
        if any(c["kind"] == kind for c in papers)))]
    items.append(("Own checks", short_counts(own_checks(claims)) if own_checks(claims) else "none"))
    distinct = mark_shared_values(claims)
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
