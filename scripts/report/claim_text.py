"""The text of one claim's cells, shared by the page (page_md.py), the HTML report (page_html.py) and the README blocks.

A claim is one row of the CSV `iclab claims` writes (framework/workflow/claims_pool.cpp, claims_table), as a dict of
strings. Columns other helpers add later are read with `column()`, so a CSV without them (every result made before
them) reads as if they were empty:
  provenance    empty, or "chosen after the first runs (YYYY-MM-DD): reason"
  leave_one_out empty, "holds", or "fragile: without seed k -> <verdict>"
  rounding      empty, "holds under rounding", or "depends on rounding: <verdict> at +1 ulp"
  min_values    empty, or the fewest values the verdict decides on (io::min_values): 1 for a deterministic check (an
                own check whose count rule asks every value: an identity, a closed form, a construction, a control),
                5 for every other claim (`iclab claims` makes it inconclusive on fewer: "needs >= 5 seeds, has n")
"""
import re
import math
import os

from verdicts import PAPERS, paper_group

KIND_SHORT = {"matches a printed number": "printed", "reproduces a qualitative claim": "qualitative", "own check": "own",
              "spec gate": "gate"}
PROVENANCE_MARK = "†"  # a rule or bar chosen after the first runs (its date and reason in the claim's details)
PAPER_KINDS = ("matches a printed number", "reproduces a qualitative claim")
STATEMENT_CHARS = 60   # the compact tables' short statement; the whole one is in the details


def column(c, name):
    """A column's value, '' when the CSV has no such column (or the cell is empty)."""
    value = c.get(name)
    return "" if value is None else str(value).strip()


def fmt(value):
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return value
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "n/a"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3e}" if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6) else f"{x:.4g}"


def finite(text):
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def anchor(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def assign_anchors(claims):
    """Each claim's details entry gets an id of its own: 'c-' and its id, numbered when several settings declare it."""
    seen = {}
    for c in claims:
        base = "c-" + anchor(c["id"])
        seen[base] = seen.get(base, 0) + 1
        c["anchor"] = base if seen[base] == 1 else f"{base}-{seen[base]}"
    return claims


def values_identity(c):
    """What two claims must share to be one measurement: the same runs (setting, what a value belongs to, the seeds or
    the instance count) and the values equal to the last bit: `values_digest` (a hash of the units and the values' bits,
    `iclab claims`) when the CSV has it, else the 3-digit values with the count, mean and interval at all 17 digits (a
    CSV made before the digest)."""
    digest = column(c, "values_digest")
    exact = digest or "|".join([column(c, "values")] + [str(c.get(k, "")) for k in ("n", "mean", "ci95_low", "ci95_high")])
    return c.get("setting", ""), c.get("unit", ""), column(c, "units"), exact


def values_tie_free(c):
    """True when no two of the claim's values are equal (`distinct_values` = n; without that column, the 3-digit values
    all differ). Tied values (a count of violations, Kendall's tau of 4 points, steps at a 50-step resolution) can equal
    another quantity's to the last bit by chance, so equal values prove one measurement only when they are tie-free."""
    try:
        n = int(float(c.get("n", "nan")))
    except (TypeError, ValueError):
        return False
    if n < 2:
        return False  # one value can equal another quantity's by chance (0, 1)
    distinct = column(c, "distinct_values")
    if distinct:
        return finite(distinct) and int(float(distinct)) == n
    values = [v.strip() for v in column(c, "values").split(",") if v.strip()]
    return len(values) == n and len(set(values)) == n


def mark_shared_values(claims):
    """Claims that judge the same measurement (issue 45: "each distinct measurement is one claim"): a claim whose runs
    and values (to the last bit, `values_identity`) equal an earlier claim's, the values tie-free (`values_tie_free`),
    applies a second rule to that claim's numbers (e.g. "G > 0" and "G >= the paper's share" of one G; a printed value and
    an exactness bar on one set of errors). Values that agree to 3 digits only, or tied values of two different
    quantities (two counts that are both 0 on every seed), are not one measurement. Each such claim gets
    `same_values_as` = the first claim's id, and every claim with a value `measurement` = its measurement's key (the
    first claim's); the page shows the first and counts the second. Returns the count of distinct measurements among the
    claims with a value."""
    owners, distinct = {}, 0
    for c in claims:
        c.pop("same_values_as", None)
        c.pop("measurement", None)
        if c.get("kind") == "spec gate" or c.get("verdict") == "not run" or not finite(c.get("mean", "nan")):
            continue
        own = c.get("key") or f"{c.get('setting', '')} :: {c['id']}"
        distinct += 1
        if not values_tie_free(c):
            c["measurement"] = own
            continue
        key = values_identity(c)
        if key in owners:
            c["same_values_as"], c["measurement"] = owners[key]
            distinct -= 1
        else:
            owners[key] = (c["id"], own)
            c["measurement"] = own
    return distinct


def measurement_of(c):
    """The key of the measurement a claim judges (set by mark_shared_values; else the claim's own key)."""
    return c.get("measurement") or c.get("key") or f"{c.get('setting', '')} :: {c['id']}"


def is_paper_claim(c):
    """A claim about a paper: of a paper kind (printed number, qualitative claim) and with a paper as its source
    (verdicts.PAPERS). Our own hypotheses declared as qualitative claims (source "issue 43") are own checks."""
    return c.get("kind") in PAPER_KINDS and paper_group(c.get("paper", "")) in PAPERS


def is_control(c):
    """A negative control: a check that an exactness check can fail (the experiments state it so: "the negative control
    of …", "negative control: …"). Reproduced means the control failed as it must; the page counts them apart from the
    own checks (second audit of issue 45), as evidence that the checks can fail, not as findings."""
    statement = c.get("statement", "")
    return statement.startswith("the negative control of ") or statement.startswith("negative control:")


def kind_of(c):
    """The kind the page shows and counts: the declared one, except that a paper kind whose source is no paper is an own
    check."""
    kind = c.get("kind", "")
    return "own check" if kind in PAPER_KINDS and not is_paper_claim(c) else kind


def is_robust(c):
    """Reproduced, and both checks made and held: no single seed's removal flips it, and its +1 ulp twin does not flip
    it. A check that was not made (instances, no twin) does not count as holding (second audit of issue 45):
    unchecked(c) counts those."""
    return c.get("verdict") == "reproduced" and leave_one_out_short(c) == "holds" and rounding_short(c) == "holds"


def unchecked(c):
    """Reproduced, neither fragile nor dependent on rounding, but without one of the two checks (not robust, not flagged)."""
    return c.get("verdict") == "reproduced" and not is_robust(c) and not is_fragile(c) and not depends_on_rounding(c)


def is_count(c):
    return column(c, "test").startswith("count_")


def has_value(c):
    return c["verdict"] != "not run" and finite(c.get("mean", "nan"))


def side_text(c):
    """'k/n' on the claimed side, for count rules (`x ... in >= k values`) as `iclab claims` counted them."""
    if not is_count(c) or c["verdict"] == "not run":
        return ""
    return f"{int(float(c['on_claimed_side']))}/{int(float(c['n']))}"


def ours_short(c):
    """The compact tables' 'ours': a count rule shows its count ('4/5 seeds'), an interval rule its mean and interval,
    a one-run claim its value; '-' when nothing was measured."""
    if c.get("ours"):  # a spec gate: "k of n reproduced"
        return c["ours"]
    if c["verdict"] == "not run" or (not is_count(c) and not finite(c.get("mean", "nan"))):
        return "-"
    shared = f" (values of {c['same_values_as']})" if c.get("same_values_as") else ""
    if is_count(c):
        unit = "seeds" if c.get("unit") == "seed" else "instances"
        return f"{side_text(c)} {unit}{shared}{against_mean_text(c)}"
    low, high = c.get("ci95_low", "nan"), c.get("ci95_high", "nan")
    if finite(low) and finite(high):
        return f"{fmt(c['mean'])} [{fmt(low)}, {fmt(high)}]{shared}"
    return fmt(c["mean"]) + shared


COUNT_DECIDES = ": the count decides; "  # framework/io/claims.cpp evaluate_claim's note, a verdict against its mean


def against_mean_text(c):
    """' (the mean is on the other side: the count decides)' for a count verdict on the other side of its own mean
    (`iclab claims` noted why: the mean's interval reaches the count's side), so the row itself says it (issue 45)."""
    return " (mean on the other side: the count decides)" if COUNT_DECIDES in column(c, "note") else ""


def ours_full(c):
    """Mean [95 % t-interval] with four digits: the details of every claim."""
    mean, low, high = fmt(c["mean"]), c.get("ci95_low", "nan"), c.get("ci95_high", "nan")
    return f"{mean} [{fmt(low)}, {fmt(high)}]" if finite(low) else mean


def paper_text(c):
    return fmt(c["paper_value"]) if c.get("kind") == "matches a printed number" else ""


def rule_text(c):
    """The declared rule and what one value x is (the claim's metric, with its unit where it names one)."""
    return f"{c['rule']}; x = {c['metric']}" if c.get("metric") else c["rule"]


def needed_count(c):
    """(k, n) of a count rule as `iclab claims` evaluated it: k values needed on the claimed side of n; None otherwise."""
    if not is_count(c) or not finite(c.get("n", "nan")):
        return None
    n = int(float(c["n"]))
    rule = c.get("rule", "")
    if "for every value" in rule:
        return n, n
    here = rule.rfind("(here ")
    if here >= 0:
        words = rule[here + len("(here "):].split()
        if len(words) >= 3 and words[0].isdigit() and words[1] == "of":
            return int(words[0]), n
    return None


def deterministic(c):
    """A deterministic check (column min_values 1: declared io::Claim::deterministic, framework/io/claims_floor.hpp):
    one value decides."""
    return column(c, "min_values") in ("1", "1.0")


POINT_BAND = re.compile(r"^(\S+) <= x <= (\S+)(?: |$)")


def point_band(c):
    """A count_within rule whose band is one number ('1.6 <= x <= 1.6 for every value'): x is a pick (an argmin over
    a grid), not a measurement on a scale."""
    m = POINT_BAND.match(c.get("rule", "")) if column(c, "test") == "count_within" else None
    return bool(m) and m.group(1) == m.group(2)


def coin_rate(k, n):
    """P(Binomial(n, 1/2) >= k) as the page prints it."""
    p = sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n
    return f"{100 * p:.2g} %" if p >= 1e-4 else "< 0.01 %"


def false_pass_text(c):
    """The chance that the rule passes on values with no effect at all (issue 45: 'rules a coin cannot pass'):
    - a one-sided interval rule (mean above / below a bar, the 95 % t-interval wholly on one side): 2.5 % when the true
      mean sits on the bar;
    - a band rule (the interval inside [lo, hi]): at most 2.5 % for a true value outside the band (on an edge); a true
      value inside passes whatever produced it, so a model without the effect passes when its value lies in the band (an
      equivalence claim, "comparable", "within x1.5", whose band contains no effect) and fails when it does not (a band
      around 1 for an accuracy, where no ICL scores chance: third audit of issue 45);
    - a count rule: P(Binomial(n, 1/2) >= k), each seed, or each instance, falling on either side of the bar by a fair
      coin (every one of 5: 3.1 %; 4 of 5: 19 %). Over the instances of an exact identity (hundreds of conversions) the
      rate is that of a coin, negligible; over 2 timings it is 25 %: the number says which;
    - a deterministic check (column min_values 1): no coin at all, one value decides: a wrong computation misses its
      bar in every value, not in half of them. Over seeds the coin's rate is still given, as what it is: an upper bound;
    - a point band (x a pick among a grid's values, '1.6 <= x <= 1.6'): the coin's rate is an upper bound too, since
      a uniform pick among k >= 2 values hits the point with 1/k <= 1/2 per seed (the rule's x names its grid)."""
    test = column(c, "test")
    if test in ("interval_above", "interval_below"):
        return "2.5 % (one-sided 95 % t-interval, true mean on the bar)"
    if test == "interval_within":
        return ("<= 2.5 % for a true value outside the band (95 % t-interval inside it); a true value inside passes "
                "whatever made it, so what the claim can fail is what lies outside the band (a model without the effect "
                "passes only when its value is inside, as for an equivalence claim whose band contains no effect)")
    counted = needed_count(c)
    if counted is None:
        return ""
    k, n = counted
    unit = "seeds" if c.get("unit") == "seed" else "instances"
    rate = coin_rate(k, n)
    if deterministic(c):
        text = ("deterministic: one value decides (declared an identity on every value; a wrong computation misses its bar "
                "in every value, not in half of them as a coin would)")
        if c.get("unit") == "seed" and n > 1:
            text += f"; a fair coin would pass {k} of {n} seeds with {rate}, an upper bound"
        return text
    if point_band(c):
        return (f"<= {rate} ({k} of {n} {unit} by a fair coin), an upper bound for a pick by chance: a uniform pick "
                "among k >= 2 values hits the one claimed value with 1/k <= 1/2 each time; what decides the pick, and "
                "so what the data can fail, is in the rule's x")
    return f"{rate} ({k} of {n} {unit} by a fair coin)"


def statement_of(c):
    """The statement without the selection `iclab claims` appends ('[picked on validation data: ...]')."""
    text = c.get("statement", "")
    cut = text.find(" [picked on validation data: ")
    return text[:cut] if cut >= 0 and text.endswith("]") else text


def selection_of(c):
    text = c.get("statement", "")
    cut = text.find(" [picked on validation data: ")
    return text[cut + len(" [picked on validation data: "):-1] if cut >= 0 and text.endswith("]") else ""


def short_statement(c, limit=STATEMENT_CHARS):
    """The statement cut at a word before `limit` characters (the whole one is in the details)."""
    text = " ".join(statement_of(c).split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[:cut if cut > limit // 2 else limit - 1].rstrip(" ,;:(") + "…"


def kind_short(c):
    return KIND_SHORT.get(kind_of(c), kind_of(c))


def undecided(c):
    return c.get("verdict") in ("inconclusive", "not run")


NO_VERDICT_TO_HOLD = "-"  # an undecided claim that stays undecided: no robustness to show (the page's legend says so)


def robustness_detail(c, name, short):
    """The details' leave-one-out or rounding text, saying what the compact column's '-' means for this claim."""
    text = column(c, name)
    if short == NO_VERDICT_TO_HOLD:
        what = "without any one seed" if name == "leave_one_out" else "under the other rounding"
        return f"- ({c['verdict']} {what} too: no decided verdict to hold; {text})"
    return text


def leave_one_out_short(c):
    """'fragile' where dropping one seed flips the verdict, 'holds' where none does, '' when not computed; '-' for an
    undecided claim whose verdict no seed flips (an inconclusive claim that stays inconclusive is no robustness)."""
    text = column(c, "leave_one_out")
    if text.startswith("holds") and undecided(c):
        return "-"
    return "fragile" if text.startswith("fragile") else "holds" if text.startswith("holds") else ""


def rounding_short(c):
    """'depends' where a perturbation of rounding flips the verdict, 'holds' where it does not, '' when not rerun; '-'
    for an undecided claim that stays undecided."""
    text = column(c, "rounding")
    if text.startswith("holds") and undecided(c):
        return "-"
    return "depends" if text.startswith("depends") else "holds" if text.startswith("holds") else ""


def is_fragile(c):
    return leave_one_out_short(c) == "fragile"


def depends_on_rounding(c):
    return rounding_short(c) == "depends"


def chosen_after(c):
    return bool(column(c, "provenance"))


def id_text(c):
    """The claim id, marked when its rule or bar was chosen after the first runs."""
    return c["id"] + (PROVENANCE_MARK if chosen_after(c) else "")


def readme_link(c, prefix):
    """(label, link) of the README section that explains the claim; ('', '') when none (or prefix None: in the README)."""
    readme = c.get("readme", "")
    if not readme or prefix is None:
        return "", ""
    return os.path.basename(os.path.dirname(readme.split("#")[0])) or readme, prefix + readme


def reason_text(c):
    """Why a claim is not reproduced or undecided, as `iclab claims` noted it ('' when the numbers say it: the count or
    the interval beside the rule), followed by the seeds left out because their run-level precondition was not met
    (column `excluded`, issue 46: "seed 2: <measure> 0.41 < 0.9 (<key>)")."""
    note, excluded = column(c, "note"), column(c, "excluded")
    return note + ("; " if note and excluded else "") + (f"excluded (precondition not met): {excluded}" if excluded else "")


def details_fields(c):
    """(label, text) pairs of everything the compact tables fold: the details entry of one claim."""
    if c.get("kind") == "spec gate":
        fields = [("statement", c["statement"]), ("source", c["source"]), ("rule", c["rule"]), ("cells", c.get("members", "")),
                  ("note", column(c, "note")), ("spec", c["setting"])]
        return [(k, v) for k, v in fields if v]
    kind = kind_of(c) + (f" (declared: {c['kind']}; it names no paper as its source)"
                         if kind_of(c) != c.get("kind", "") else "")
    fields = [("statement", statement_of(c)), ("source", c.get("source", "")), ("kind", kind),
              ("rule", rule_text(c)), ("false-pass rate", false_pass_text(c)), ("setting", c.get("setting", "")),
              ("seeds" if c.get("unit") == "seed" else "instances", c.get("units", "")),
              ("per seed", c.get("values", "")), ("same values as", c.get("same_values_as", "")),
              ("on the claimed side", side_text(c)),
              # a count rule shows its count, and its mean without a t-interval (bounded values: Kendall's tau's
              # interval reached below -1); an interval rule its mean and interval
              ("mean" if is_count(c) else "mean [95 % t-interval]",
               (fmt(c["mean"]) if is_count(c) else ours_full(c)) if c["verdict"] != "not run" else ""),
              ("paper", fmt(c["paper_value"]) if c.get("kind") == "matches a printed number" else ""),
              ("selection", selection_of(c)), ("note", column(c, "note")),
              (PROVENANCE_MARK + " provenance", column(c, "provenance")),
              ("leave one seed out", robustness_detail(c, "leave_one_out", leave_one_out_short(c))),
              ("rounding", robustness_detail(c, "rounding", rounding_short(c))),
              ("excluded seeds (precondition not met)", column(c, "excluded"))]
    return [(k, v) for k, v in fields if v]
