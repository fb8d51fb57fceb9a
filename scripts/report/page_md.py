"""The claims in Markdown, read in a minute: the page scripts/reproduce.sh commits (docs/reproduction.md), the claims
part of OUT/report.md and each experiment README's generated block.

Layout: the headline counts; the claims that do not reproduce, one line each (then the undecided ones); one compact
table per paper (claim, short statement, kind, ours, paper, verdict, leave-one-out, rounding) with everything else of
each claim folded in a <details> block after the table. A count rule shows its count ("2/3 seeds"), an interval rule
its mean and 95 % t-interval, a spec gate "k of n reproduced".

    /usr/bin/python3 scripts/report/page_md.py CLAIMS_CSV [--out PAGE] [--title T] [--profile P]
renders the claims part of a page from a claims CSV alone (no runs: a visual check of the layout).
"""
import argparse
import sys

from claim_text import (assign_anchors, details_fields, id_text, kind_short, leave_one_out_short, mark_shared_values,
                        ours_short, paper_text, readme_link, reason_text, rounding_short, short_statement)
from counts import VERDICTS_TEXT, counts_text, headline_items, how_many, short_counts
from gates import gate_claims
from reasons import reason_line
from verdicts import PAPER_ORDER, PAPER_TITLES, read_claims_csv, verdict_keys_block

COMPACT_COLUMNS = ["claim", "statement", "kind", "ours", "paper", "verdict", "leave one out", "rounding"]
LEGEND = ("Ours: a count rule's values on the claimed side (\"2/3 seeds\"), an interval rule's mean [95 % t-interval], a "
          "gate's reproduced cells. Kind: *printed* = matches a number the paper printed (its value under paper), "
          "*qualitative* = reproduces a qualitative claim, *own* = our own check (no paper value); a claim counts as a paper "
          "claim only when its source is one of the papers (000, 002, 003, 004, von Oswald 2023): our own hypotheses "
          "(issue 43) are own checks whatever kind they declare; *gate* = a count of the spec over other rows. Leave one "
          "out: *fragile* when dropping one seed flips the verdict, *holds* when no drop does, *-* for an undecided "
          "claim that stays undecided without any one seed (no decided verdict to hold), empty when not checked (fewer "
          "than 3 seeds, or over instances). Rounding: *depends* when a rerun under another rounding flips it, *holds* "
          "when it does not, *-* for an undecided claim that stays undecided under it, empty when not rerun. A count "
          "verdict on the other side of its own mean says so under ours (\"the count decides\": the mean's 95 % "
          "interval reaches the count's side). Robust = reproduced, and both checks made and held (a check not made, e.g. over "
          "instances or without a rounding twin, does not count as holding: such claims are counted as unchecked). Distinct measurements: claims on the same runs whose values are equal to "
          "the last bit (and not tied, as counts of 0 are) judge one measurement, counted once. † = rule or bar chosen "
          "after the first runs (date and reason in the claim's details).")


def esc(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def bold_unless_reproduced(verdict):
    return verdict if verdict == "reproduced" else f"**{verdict}**"


def by_paper(claims):
    groups = {}
    for c in claims:
        groups.setdefault(c["paper"] if c["paper"] in PAPER_ORDER else "other", []).append(c)
    return [(p, groups[p]) for p in list(PAPER_ORDER) + ["other"] if p in groups]


def failure_line(c, link_prefix):
    """One line of the page's opening list: id, short statement, ours vs the rule, the rule's note, the README
    section; for a claim that does not reproduce, the team's reading of why (docs/claim_reasons.yaml, reasons.py) or
    "no reason recorded"."""
    label, link = readme_link(c, link_prefix)
    reason = reason_text(c)
    statement = "" if ": " in c["id"] else " " + short_statement(c, 50)  # an id with a ': ' names its statement
    # Short enough to read the list in a minute (third audit of issue 45): the rule, the rule's note and the statement
    # in full are in the claim's details (the link); a claim that does not reproduce gives the team's reading of why,
    # an undecided one the rule's note (why it cannot decide).
    line = f"- [**{esc(id_text(c))}**](#{c['anchor']}){esc(statement)}: ours {esc(ours_short(c))}"
    if c["verdict"] != "not reproduced":
        return line + (f"; {esc(reason)}" if reason else "") + (f" ([{label}]({link}))" if link else "")
    why, see = reason_line(c, link_prefix)
    return line + f"; *{esc(why)}*" + (f" ([why]({see}))" if see else (f" ([{label}]({link}))" if link else ""))


def failures_md(rows, link_prefix, heading="##"):
    """The opening lists: not reproduced, then inconclusive and not run (empty lists say so in one line)."""
    failed = [c for c in rows if c["verdict"] == "not reproduced"]
    unsure = [c for c in rows if c["verdict"] in ("inconclusive", "not run")]
    lines = [f"{heading} Not reproduced ({how_many(failed)})", ""]
    lines += [failure_line(c, link_prefix) for c in failed] or ["Every decided claim is reproduced."]
    lines += ["", f"{heading} Inconclusive or not run ({how_many(unsure)})", ""]
    lines += [failure_line(c, link_prefix) for c in unsure] or ["None."]
    return lines + [""]


def compact_table_md(claims):
    lines = ["| " + " | ".join(COMPACT_COLUMNS) + " |", "|" + "---|" * len(COMPACT_COLUMNS)]
    for c in claims:
        cells = [id_text(c), short_statement(c), kind_short(c), ours_short(c), paper_text(c),
                 bold_unless_reproduced(c["verdict"]), leave_one_out_short(c), rounding_short(c)]
        lines.append("| " + " | ".join(esc(v) for v in cells) + " |")
    return "\n".join(lines)


def details_md(claims, link_prefix):
    """The folded details of a table's claims: one list item per claim, with an anchor the opening list links to."""
    lines = [f"<details><summary>Statements, rules, per-seed values and selection of these {len(claims)} claims</summary>", ""]
    for c in claims:
        label, link = readme_link(c, link_prefix)
        fields = "; ".join(f"{k}: {esc(v)}" for k, v in details_fields(c))
        lines.append(f'- <a id="{c["anchor"]}"></a>**{esc(id_text(c))}** ({bold_unless_reproduced(c["verdict"])}): {fields}'
                     + (f"; explained in [{label}]({link})" if link else ""))
    return lines + ["", "</details>"]


def table_with_details(claims, link_prefix):
    return [compact_table_md(claims), ""] + details_md(claims, link_prefix) + [""]


def claims_sections_md(claims, gates, link_prefix, heading="##", title_prefix=""):
    """One section per paper: its compact table, the spec's gates of that paper in a table of their own, details."""
    lines = []
    for paper, group in by_paper(claims):
        lines += [f"{heading} {title_prefix}{PAPER_TITLES.get(paper, 'Other')} ({short_counts(group)})", ""]
        lines += table_with_details(group, link_prefix)
        own_gates = [g for g in gates if g["paper"] == paper]
        if own_gates:
            lines += [f"**Spec gates of paper {paper}** ({short_counts(own_gates)}), counted from the rows above:", ""]
            lines += table_with_details(own_gates, link_prefix)
    return lines


def headline_md(claims, gates):
    lines = [f"**{counts_text(claims)}.**", ""]
    return lines + [f"- **{label}**: {text}." for label, text in headline_items(claims, gates)] + [""]


def legend_md():
    """The key to the verdicts and columns, folded after the opening lists (the page opens with what fails)."""
    return ["<details><summary>How to read the verdicts and the columns</summary>", "", f"Verdicts: {VERDICTS_TEXT}. {LEGEND}",
            "", "</details>", ""]


def claims_page_md(claims, gates, link_prefix):
    """Headline, the failures, the per-paper tables: the top of the page and of OUT/report.md."""
    assign_anchors(claims + gates)
    mark_shared_values(claims)
    return (headline_md(claims, gates) + failures_md(claims + gates, link_prefix) + legend_md() +
            claims_sections_md(claims, gates, link_prefix))


def reproduction_page(claims, gates, facts, title, profile, unfinished, run_rows, record="", record_rows=()):
    """OUT/reproduction.md, which scripts/reproduce.sh commits as docs/reproduction.md (links relative to docs/).
    facts: (label, text) of the machine and commits; run_rows: (section, setting, seed, wall s, peak GiB) texts;
    record: the sentence saying which commit computes every number (make_report.record_sentence); record_rows:
    (commit[ (dirty)], fingerprint families, runs) texts, the table scripts/report/measured_blocks.py judges the page by
    (each row by its own families' fingerprint lines)."""
    lines = [f"# {title}", "", "Generated by `scripts/reproduce.sh` from the report (scripts/report/make_report.py); do not edit.",
             f"`scripts/reproduce.sh --profile {profile} --check` fails when any verdict below changes.", ""]
    if record:
        lines += [record, ""]
    lines += claims_page_md(claims, gates, "../")
    lines += list(unfinished)
    if facts:
        lines += ["## Machine and runs", ""] + [f"- {k}: {v}" for k, v in facts] + [""]
    if record_rows:
        lines += ["The runs by commit and the fingerprint families they depend on (scripts/report/measured_blocks.py "
                  "judges the page by each row: its families' lines of tests/data/fingerprints.txt at its commit must be "
                  "the checkout's):", "", "| commit | fingerprint families | runs |", "|---|---|---|"]
        lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in record_rows] + [""]
    if run_rows:
        lines += ["<details><summary>Wall time and peak memory per run</summary>", "",
                  "Peak memory: the run process's peak resident set, measured by the sweep launcher (empty for runs of "
                  "older launchers).", "", "| section | setting | seed | wall time (s) | peak memory (GiB) |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in run_rows] + ["", "</details>", ""]
    lines += [verdict_keys_block(claims + gates), ""]
    return "\n".join(lines)


def readme_blocks(claims, title, page, gates=()):
    """{README path: its generated claims block}: the claims each experiment README explains, as the page has them
    (scripts/report/readme_claims.py puts each block in its README). `page` is the repo path of the profile's page."""
    import os
    groups = {}
    mark_shared_values(claims)
    for c in list(claims) + list(gates):
        readme = c.get("readme", "").split("#")[0]
        if readme:
            groups.setdefault(readme, []).append(c)
    blocks = {}
    for readme, group in groups.items():
        own = [c for c in group if c.get("kind") != "spec gate"]
        group_gates = [c for c in group if c.get("kind") == "spec gate"]
        assign_anchors(own + group_gates)
        link = os.path.relpath(page, os.path.dirname(readme))
        failed = [c["id"] for c in group if c["verdict"] == "not reproduced"]
        unsure = [c["id"] for c in group if c["verdict"] == "inconclusive"]
        absent = [c["id"] for c in group if c["verdict"] == "not run"]
        lines = [f"Generated by `scripts/reproduce.sh` from the report \"{title}\"; do not edit. The same rows, with every "
                 f"other claim: [{os.path.basename(page)}]({link}).", "",
                 f"**{counts_text(own)}.**" + (f" Spec gates: {short_counts(group_gates)}." if group_gates else "")
                 + (f" Not reproduced: {'; '.join(failed)}." if failed else " Every decided claim is reproduced.")
                 + (f" Inconclusive: {'; '.join(unsure)}." if unsure else "") + (f" Not run: {'; '.join(absent)}." if absent else ""),
                 ""]
        if own:
            lines += table_with_details(own, None)
        if group_gates:
            lines += ["Spec gates, counted from the rows above:", ""] + table_with_details(group_gates, None)
        blocks[readme] = "\n".join(lines).rstrip() + "\n"
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--out", default="-")
    parser.add_argument("--title", default="iclab reproduction (claims only)")
    parser.add_argument("--profile", default="quick")
    args = parser.parse_args()
    claims = read_claims_csv(args.csv)
    text = reproduction_page(claims, gate_claims(claims), [], args.title, args.profile, [], [])
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
