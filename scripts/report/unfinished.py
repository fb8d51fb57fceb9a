"""The jobs of a profile that have not finished, for the page of a partial report (scripts/reproduce.sh --report-only).

The input is `iclab sweep FILE --dry-run` of each part of the profile (one listing per part, saved by reproduce.sh as
PART.listing with the part's sweep file on its first line): one line per job, `STATE  NAME  (estimate)`. The page then
says what is still to run, part by part, with the experiment's own estimate, so a reader of a partial page knows which
claims are missing because their runs have not finished (they show as "not run" or are absent)."""
import html
import os
import re

LINE = re.compile(r"^(finished|pending|interrupted|stale|running|failed)\s+(\S+)\s*(?:\((.*)\))?\s*$")
MINUTES = re.compile(r"about ([0-9.]+) (s|min|h) at")


def parse_listing(text):
    """[(state, job, estimate text)] of one --dry-run listing; lines that are not job lines are ignored."""
    jobs = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            jobs.append((m.group(1), m.group(2), (m.group(3) or "").strip()))
    return jobs


def estimate_minutes(estimate):
    """The nominal time of an estimate text in minutes (0 when it names none)."""
    m = MINUTES.search(estimate)
    if not m:
        return 0.0
    value, unit = float(m.group(1)), m.group(2)
    return value / 60 if unit == "s" else value * 60 if unit == "h" else value


def read_parts(folder):
    """[(sweep file, jobs)] from FOLDER/*.listing in name order (reproduce.sh numbers them by part)."""
    parts = []
    if not folder or not os.path.isdir(folder):
        return parts
    for name in sorted(os.listdir(folder)):
        if name.endswith(".listing"):
            with open(os.path.join(folder, name)) as f:
                first, _, rest = f.read().partition("\n")
            parts.append((first.strip(), parse_listing(rest)))
    return parts


def unfinished_md(parts):
    """Markdown lines: per part the counts by state and the nominal work left, then (folded) every job not finished
    with its state and estimate; [] when every job finished."""
    summary, rows, total, done, left = [], [], 0, 0, 0.0
    for file, jobs in parts:
        open_jobs = [(s, j, e) for s, j, e in jobs if s != "finished"]
        total, done = total + len(jobs), done + len(jobs) - len(open_jobs)
        if not open_jobs:
            continue
        minutes = sum(estimate_minutes(e) for _, _, e in open_jobs)
        left += minutes
        states = ", ".join(f"{sum(1 for s, _, _ in open_jobs if s == name)} {name}"
                           for name in ("running", "interrupted", "stale", "pending") if any(s == name for s, _, _ in open_jobs))
        summary.append(f"| {file} | {len(jobs) - len(open_jobs)} of {len(jobs)} | {states} | {minutes / 60:.1f} h |")
        rows += [f"| {file} | {job} | {state} | {estimate} |" for state, job, estimate in open_jobs]
    if not rows:
        return []
    return ["## Not finished yet", "",
            f"{total - done} of {total} jobs of this profile have not finished (nominal work left about {left / 60:.1f} h at "
            "50 GFLOP/s; measured runs took 1-7x their nominal time on one shared thread of a 2-core machine). Their "
            "claims are missing above or show as *not run*. Each job's estimate is the experiment's own "
            "(`scripts/reproduce.sh --plan`).", "",
            "| part | finished | not finished | nominal work left |", "|---|---|---|---|", *summary, "",
            f"<details><summary>the {len(rows)} jobs not finished</summary>", "",
            "| part | job | state | estimate (memory, work) |", "|---|---|---|---|", *rows, "", "</details>", ""]


def unfinished_html(parts):
    """The same for the HTML report: a heading, the per-part summary table and the folded job list ('' when done)."""
    md = unfinished_md(parts)
    if not md:
        return ""
    out, table = [], []

    def flush():
        if table:
            cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in table if not row.startswith("|---")]
            head, body = cells[0], cells[1:]
            out.append("<div class='scroll'><table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>" +
                       "".join("<tr>" + "".join(f"<td class='l'>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body) +
                       "</table></div>")
            table.clear()

    for line in md:
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2 id='unfinished'>{html.escape(line[3:])}</h2>")
        elif line.startswith("<"):
            out.append(line)  # <details>, <summary>: written above by unfinished_md
        elif line:
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    return "".join(out)
