"""The claims in the HTML report (OUT/index.html), laid out as the page (page_md.py): the headline, the claims that do
not reproduce (one line each, linked to their details and README), then one compact table per paper with every other
column of its claims folded in a <details> table after it."""
import html

from claim_text import (assign_anchors, details_fields, id_text, kind_short, leave_one_out_short, ours_short, paper_text,
                        readme_link, reason_text, rounding_short, short_statement)
from counts import VERDICTS_TEXT, counts_text, headline_items, how_many, short_counts
from page_md import COMPACT_COLUMNS, LEGEND, by_paper
from reasons import reason_line
from verdicts import PAPER_TITLES

VERDICT_CLASS = {"reproduced": "ok", "not reproduced": "bad", "inconclusive": "unsure", "not run": "na"}
STYLE = ("table.claims td{text-align:left;max-width:38em} td.ok{background:#d9f2d9} td.bad{background:#f6cccc} "
         "td.unsure{background:#fff2c6} td.na{background:#e4e4e4} ul.failures{font-size:13px} ul.failures li{margin:2px 0} "
         "table.details td{text-align:left;max-width:60em} table.details th{text-align:left;position:static}")
e = html.escape


def verdict_td(verdict):
    return f'<td class="{VERDICT_CLASS.get(verdict, "na")}">{e(verdict)}</td>'


def compact_table_html(claims):
    """One row per claim: the compact columns, the id linked to its details row."""
    head = "".join(f"<th>{e(h)}</th>" for h in COMPACT_COLUMNS)
    rows = []
    for c in claims:
        cells = [f'<td class="l"><a href="#{e(c["anchor"])}">{e(id_text(c))}</a></td>',
                 f'<td class="l" title="{e(c.get("statement", ""))}">{e(short_statement(c))}</td>',
                 f'<td class="l">{e(kind_short(c))}</td>', f'<td class="l">{e(ours_short(c))}</td>',
                 f'<td class="l">{e(paper_text(c))}</td>', verdict_td(c["verdict"]),
                 f'<td class="l">{e(leave_one_out_short(c))}</td>', f'<td class="l">{e(rounding_short(c))}</td>']
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table class="claims"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def details_html(claims, link_prefix):
    """Everything the compact table folds, one row per claim (statement, source, rule, setting, per seed, ...)."""
    rows = []
    for c in claims:
        label, link = readme_link(c, link_prefix)
        fields = "".join(f"<b>{e(k)}</b>: {e(v)}<br>" for k, v in details_fields(c))
        if link:
            fields += f'<b>explained in</b>: <a href="{e(link)}">{e(label)}</a>'
        rows.append(f'<tr id="{e(c["anchor"])}"><td class="l">{e(id_text(c))}</td>{verdict_td(c["verdict"])}'
                    f'<td class="l">{fields}</td></tr>')
    return (f"<details><summary>Statements, rules, per-seed values and selection of these {len(claims)} claims</summary>"
            f'<table class="details"><thead><tr><th>claim</th><th>verdict</th><th>details</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></details>')


def failures_html(rows, link_prefix, after_failures=""):
    """The opening lists: not reproduced, `after_failures` (the report's navigation), then inconclusive and not run."""
    out = []
    for title, verdicts in (("Not reproduced", ("not reproduced",)), ("Inconclusive or not run", ("inconclusive", "not run"))):
        group = [c for c in rows if c["verdict"] in verdicts]
        items = []
        for c in group:
            label, link = readme_link(c, link_prefix)
            reason = reason_text(c)
            statement = "" if ": " in c["id"] else " " + short_statement(c, 50)
            why = ""
            if c["verdict"] == "not reproduced":  # the team's reading (docs/claim_reasons.yaml), or "no reason recorded"
                why_text, see = reason_line(c, link_prefix)
                why = f"; <i>{e(why_text)}</i>" + (f' (<a href="{e(see)}">why</a>)' if see else "")
            items.append(f'<li><a href="#{e(c["anchor"])}"><b>{e(id_text(c))}</b></a>{e(statement)}: ours {e(ours_short(c))}, '
                         f"rule <code>{e(c['rule'])}</code>" + (f"; {e(reason)}" if reason else "")
                         + (f' (<a href="{e(link)}">{e(label)}</a>)' if link else "") + why + "</li>")
        out.append(f'<h2 id="{"failures" if verdicts[0] == "not reproduced" else "undecided"}">{e(title)} ({e(how_many(group))})</h2>'
                   + (f'<ul class="failures">{"".join(items)}</ul>' if items else "<p>None.</p>"))
        if verdicts[0] == "not reproduced":
            out.append(after_failures)
    return "".join(out)


def claims_page_html(claims, gates, link_prefix, anchor_of_paper, navigation=""):
    """The top of OUT/index.html: headline, the failures, `navigation` (the report's links to its sections), the
    undecided claims, the legend, one compact table per paper (the paper's gates after it). The first screen (1400 x
    2400, scripts/report/screenshot.sh) shows the headline and the claims that do not reproduce."""
    assign_anchors(claims + gates)
    items = "".join(f"<li><b>{e(k)}</b>: {e(v)}.</li>" for k, v in headline_items(claims, gates))
    body = [f"<p class='summary'><b>{e(counts_text(claims))}</b>.</p><ul>{items}</ul>",
            failures_html(claims + gates, link_prefix, navigation), f"<p>Verdicts: {e(VERDICTS_TEXT)}. {e(LEGEND)}</p>"]
    for paper, group in by_paper(claims):
        body += [f'<h2 id="claims-{anchor_of_paper(paper)}">{e(PAPER_TITLES.get(paper, "Other"))} ({e(short_counts(group))})</h2>',
                 compact_table_html(group), details_html(group, link_prefix)]
        own_gates = [g for g in gates if g["paper"] == paper]
        if own_gates:
            body += [f"<p><b>Spec gates of paper {e(paper)}</b> ({e(short_counts(own_gates))}), counted from the rows above:</p>",
                     compact_table_html(own_gates), details_html(own_gates, link_prefix)]
    return "".join(body)
