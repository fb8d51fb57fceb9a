"""The reproduction report: at the top one claims table per paper (every declared claim, pooled over seeds by
`iclab claims`, with its kind, source, rule (and what x is), seeds, the per-seed values, how many values lie on the
claimed side for a count rule, our value with its 95 % interval, the paper's value only where the paper printed one,
and the verdict), then one section per experiment in paper order with its figures and its
raw tables folded. Writes OUT/index.html, OUT/report.md, OUT/reproduction.md (the page scripts/reproduce.sh commits
as docs/reproduction.md), OUT/claims.csv and OUT/figures/*.png.

    /usr/bin/python3 scripts/report/make_report.py RUN_OR_SWEEP_DIR... --out results/report [--iclab build/iclab]

Verdicts (one vocabulary, framework/io/claims.hpp): reproduced / not reproduced / inconclusive / not run (no value at
all, e.g. a paired claim whose other arm never ran). Declared claims
come from each run's /claims; a table that has no declared claims but a `paper_bands` attribute ("OURS PAPER ratio
T" or "OURS PAPER abs T") adds one printed-number row per table row with a paper value (one run, no interval).
Nothing else is recomputed: every number is a run's results.h5.
"""
import argparse
import datetime
import html
import json
import math
import os
import platform
import subprocess
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from iclab_runs import find_runs, load_run  # noqa: E402
from script_io import atomic_output, atomic_savefig, atomic_write_text  # noqa: E402
from unfinished import read_parts, unfinished_html, unfinished_md  # noqa: E402
from verdicts import (PAPER_ORDER, PAPER_TITLES, VERDICTS, band_verdict, read_claims_csv,  # noqa: E402
                      verdict_keys_block)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# experiment -> (paper, section title named after the paper's tables and figures); the order is paper order
SECTIONS = [
    ("iclca_exactness", "000", "Paper 000 Table 1 and Theorem 4.1: ICLCA exactness"),
    ("iclca_induction", "000", "Paper 000 Table 2: ICL accuracy of the converted model"),
    ("bias_training", "000", "Paper 000 Figure 1: training with the bias terms"),
    ("iclaa", "000", "Paper 000 §5, §6.4: ICLAA for softmax attention"),
    ("iclaa_lm", "000", "Paper 000 §6.4, Tables 3-5: ICLAA on a language model (KJV, or an imported GPT-2)"),
    ("iclca_serving", "000", "Paper 000 §7: serving converted prompts"),
    ("gd_duals", "002", "Papers 002 Theorem 1 / Algorithm 1, 004 Theorem 1 and Eq. 13-18, von Oswald Prop. 1: exact GD duals"),
    ("lsa_gd", "003", "Paper 003 Part A: Figure 2, Figure 4, Propositions 1-8, App. D"),
    ("prefix_vs_causal", "003", "Paper 003 Part B: Tables 1, 3-7, Figures 3 and 6"),
    ("regression", "004", "Paper 004 §5.1: Performer regression"),
    ("gd004_example", "004", "Paper 004 §5.2, Figure 3 left: the worked example"),
    ("gd004_figures", "004", "Paper 004 Figures 3 (centre, right), 4, 6, 7, 9, 10"),
    ("gd004_fig5", "004", "Paper 004 Figure 5: training with the modified attentions"),
    ("vo_trained", "von Oswald 2023", "von Oswald et al. 2023 Figure 2: trained LSA against one GD step"),
]
SECTION_OF = {name: (i, paper, title) for i, (name, paper, title) in enumerate(SECTIONS)}


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


def anchor(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def relative(setting):
    """A setting names its config by absolute path; relative to the checkout, so that the verdict keys of
    docs/reproduction.md match in another clone or worktree (reproduce.sh --check). A run made in another checkout
    (a finished run reused from a worktree) names that checkout's path: shortened at its last /configs/."""
    if setting.startswith(ROOT + os.sep):
        return setting[len(ROOT) + 1:]
    cut = setting.rfind(os.sep + "configs" + os.sep) if setting.startswith(os.sep) else -1
    return setting[cut + 1:] if cut >= 0 else setting


def setting_of(run):
    overrides = " ".join(t for t in str(run.attrs.get("overrides", "")).split()
                         if not t.startswith("seed=") and not t.startswith("output."))
    return relative((str(run.attrs.get("config_source", "")) + (" " + overrides if overrides else "")).strip())


def bands_of(run, table):
    with h5py.File(os.path.join(run.run_dir, "results.h5"), "r") as f:
        text = f["tables"][table].attrs.get("paper_bands", "")
    text = text.decode() if isinstance(text, bytes) else text
    return [line.split() for line in text.splitlines() if len(line.split()) == 4]


def band_claims(run):
    """Printed-number rows of a table's paper_bands, for runs that declare no /claims (one run each)."""
    experiment = run.attrs.get("experiment", "?")
    paper = SECTION_OF.get(experiment, (0, "other", ""))[1]
    out = []
    for name in sorted(run.tables):
        frame = run.tables[name]
        label_column = next((c for c in frame.columns if frame[c].dtype == object), None)
        for ours, paper_column, kind, tol in bands_of(run, name):
            if ours not in frame.columns or paper_column not in frame.columns:
                continue
            for i, (o, p) in enumerate(zip(frame[ours], frame[paper_column])):
                verdict = band_verdict(o, p, kind, tol)
                if verdict is None:
                    continue
                label = f"{frame[label_column].iloc[i]}" if label_column else f"row {i}"
                rule = f"within a factor {tol} of the printed value" if kind == "ratio" else f"within ±{tol} of the printed value"
                out.append({"setting": setting_of(run), "experiment": experiment, "paper": paper,
                            "id": f"/tables/{name} {label}: {ours}", "source": f"/tables/{name} (paper_bands)",
                            "kind": "matches a printed number", "statement": f"{ours} of {label} matches the paper's {paper_column}",
                            "rule": rule + " (one run, no interval)", "units": str(run.attrs.get("seed", "?")), "unit": "seed",
                            "n": "1", "mean": str(o), "ci95_low": "nan", "ci95_high": "nan", "paper_value": str(p),
                            "verdict": verdict, "readme": f"experiments/{experiment}/README.md",
                            "key": f"{setting_of(run)} :: /tables/{name} row {i}: {ours} vs {paper_column}"})
    return out


def ours_text(c):
    mean, low, high = fmt(c["mean"]), c.get("ci95_low", "nan"), c.get("ci95_high", "nan")
    try:
        if not math.isnan(float(low)):
            return f"{mean} [{fmt(low)}, {fmt(high)}]"
    except ValueError:
        pass
    return mean


def seeds_text(c):
    return c["units"]


def rule_text(c):
    """The declared rule and what one value x is (the claim's metric, with its unit where it names one)."""
    return f"{c['rule']}; x = {c['metric']}" if c.get("metric") else c["rule"]


def per_seed_text(c):
    """The values `iclab claims` pooled, in seed order, 3 significant digits; empty for claims over instances."""
    return c.get("values", "")


def side_text(c):
    """'k/n' on the claimed side, for count rules (`x ... in >= k values`) as `iclab claims` counted them."""
    if not c.get("test", "").startswith("count_") or c["verdict"] == "not run":
        return ""
    return f"{int(float(c['on_claimed_side']))}/{int(float(c['n']))}"


def paper_text(c):
    return fmt(c["paper_value"]) if c["kind"] == "matches a printed number" else ""


CLAIM_COLUMNS = ["claim", "source", "kind", "rule", "seeds / instances", "per seed", "on the claimed side",
                 "ours (mean [95 % t-interval])", "paper", "verdict", "explained in"]
VERDICT_CELL = CLAIM_COLUMNS.index("verdict")
VERDICT_CLASS = {"reproduced": "ok", "not reproduced": "bad", "inconclusive": "unsure", "not run": "na"}


def claim_cells(c, link_prefix):
    readme = c.get("readme", "")
    link = (link_prefix + readme) if readme else ""
    return [f"{c['id']}: {c['statement']}", c["source"], c["kind"], rule_text(c), seeds_text(c), per_seed_text(c), side_text(c),
            ours_text(c), paper_text(c), c["verdict"], (readme, link)]


def claims_html(claims, link_prefix):
    head = "".join(f"<th>{html.escape(h)}</th>" for h in CLAIM_COLUMNS)
    rows = []
    for c in claims:
        cells = claim_cells(c, link_prefix)
        tds = []
        for i, value in enumerate(cells):
            if i == len(cells) - 1:
                text, link = value
                tds.append(f'<td><a href="{html.escape(link)}">{html.escape(os.path.basename(os.path.dirname(text)) or text)}</a></td>'
                           if link else "<td></td>")
                continue
            cls = VERDICT_CLASS.get(value) if i == VERDICT_CELL else None
            tds.append(f'<td class="{cls}">{html.escape(value)}</td>' if cls else f'<td class="l">{html.escape(value)}</td>')
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return f'<div class="scroll"><table class="claims"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def claims_md(claims, link_prefix):
    esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(CLAIM_COLUMNS) + " |", "|" + "---|" * len(CLAIM_COLUMNS)]
    for c in claims:
        cells = claim_cells(c, link_prefix)
        text, link = cells[-1]
        cells[-1] = f"[{os.path.basename(os.path.dirname(text)) or text}]({link})" if link else ""
        if cells[VERDICT_CELL] != "reproduced":
            cells[VERDICT_CELL] = f"**{cells[VERDICT_CELL]}**"
        lines.append("| " + " | ".join(esc(v) for v in cells) + " |")
    return "\n".join(lines)


def by_paper(claims):
    groups = {}
    for c in claims:
        groups.setdefault(c["paper"] if c["paper"] in PAPER_ORDER else "other", []).append(c)
    return [(p, groups[p]) for p in list(PAPER_ORDER) + ["other"] if p in groups]


def counts_text(claims):
    counts = {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    return (f"{len(claims)} claims: {counts['reproduced']} reproduced, {counts['not reproduced']} not reproduced, "
            f"{counts['inconclusive']} inconclusive, {counts['not run']} not run")


VERDICTS_TEXT = ("reproduced = the declared rule holds; not reproduced = it fails; inconclusive = the rule cannot decide "
                 "(one seed, an interval straddling its edge); not run = no value at all (e.g. a paired claim whose other "
                 "arm never ran)")


def readme_blocks(claims, title, page):
    """{README path: its generated claims block}: the claims each experiment README explains, as the report has them
    (scripts/report/readme_claims.py puts each block in its README). `page` is the repo path of the profile's page."""
    esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    groups = {}
    for c in claims:
        readme = c.get("readme", "").split("#")[0]
        if readme:
            groups.setdefault(readme, []).append(c)
    blocks = {}
    for readme, group in groups.items():
        failed = [c["id"] for c in group if c["verdict"] == "not reproduced"]
        unsure = [c["id"] for c in group if c["verdict"] == "inconclusive"]
        absent = [c["id"] for c in group if c["verdict"] == "not run"]
        link = os.path.relpath(page, os.path.dirname(readme))
        lines = [f"Generated by `scripts/reproduce.sh` from the report \"{title}\"; do not edit. Statements, sources and kinds "
                 f"of these claims: [{os.path.basename(page)}]({link}).", "",
                 f"**{counts_text(group)}.** " + (f"Not reproduced: {'; '.join(failed)}." if failed else "Every decided claim is reproduced.")
                 + (f" Inconclusive: {'; '.join(unsure)}." if unsure else "") + (f" Not run: {'; '.join(absent)}." if absent else ""),
                 "", "| claim | config | rule | seeds / instances | per seed | on the claimed side | ours (mean [95 % t-interval]) "
                 "| paper | verdict |", "|---|---|---|---|---|---|---|---|---|"]
        for c in group:
            verdict = c["verdict"] if c["verdict"] == "reproduced" else f"**{c['verdict']}**"
            cells = [c["id"], c["setting"], rule_text(c), seeds_text(c), per_seed_text(c), side_text(c), ours_text(c), paper_text(c),
                     verdict]
            lines.append("| " + " | ".join(esc(v) for v in cells) + " |")
        blocks[readme] = "\n".join(lines)
    return blocks


def figures_of(run, out_dir, stem):
    made = []
    if run.attrs.get("experiment") == "bias_training":
        path = os.path.join(out_dir, f"{stem}_figure1.png")
        script = os.path.join(os.path.dirname(__file__), "..", "plot", "figure1.py")
        if subprocess.run([sys.executable, script, run.run_dir, path], capture_output=True).returncode == 0:
            made.append(("Figure 1: ICL accuracy and loss over training, mean and min-max over seeds", path))
        return made
    if run.attrs.get("experiment") == "iclaa":
        path = os.path.join(out_dir, f"{stem}_iclaa_pareto.png")
        script = os.path.join(os.path.dirname(__file__), "..", "plot", "iclaa_pareto.py")
        if subprocess.run([sys.executable, script, run.run_dir, path], capture_output=True).returncode == 0:
            made.append(("ICLAA: relative logit error and ICL accuracy against the bytes standing for the prompt", path))
    if run.attrs.get("experiment") == "gd004_example":
        path = os.path.join(out_dir, f"{stem}_fig3_left.png")
        script = os.path.join(os.path.dirname(__file__), "..", "plot", "gd004_fig3_left.py")
        if subprocess.run([sys.executable, script, run.run_dir, path], capture_output=True).returncode == 0:
            made.append(("Paper 004 Fig. 3 (left) / Fig. 8: GD-CL prediction against the SGD step", path))
    if run.attrs.get("experiment") == "gd004_figures":
        script = os.path.join(os.path.dirname(__file__), "..", "plot", "gd004_figures.py")
        done = subprocess.run([sys.executable, script, run.run_dir, out_dir, f"{stem}_"], capture_output=True, text=True)
        if done.returncode == 0:
            for path in done.stdout.split():
                made.append(("Paper 004 " + os.path.basename(path)[len(stem) + 5:-4].replace("_", " "), path))
    if run.attrs.get("experiment") == "gd004_fig5":
        script = os.path.join(os.path.dirname(__file__), "..", "plot", "gd004_fig5.py")
        done = subprocess.run([sys.executable, script, run.run_dir, out_dir, f"{stem}_"], capture_output=True, text=True)
        if done.returncode == 0:
            for path in done.stdout.split():
                made.append(("Paper 004 " + os.path.basename(path)[len(stem) + 5:-4].replace("_", " "), path))
    if run.curves is None:
        return made
    for metric in ("icl_accuracy", "relative_query_mse", "query_mse", "eval_loss"):
        if metric in run.curves.columns:
            fig, ax = plt.subplots(figsize=(5, 3.2))
            for curve, part in run.curves.groupby("curve"):
                ax.plot(part["step"], part[metric], label=curve if curve != "curves" else None)
            ax.set_xlabel("step")
            ax.set_ylabel(metric)
            ax.grid(alpha=0.3)
            if run.curves["curve"].nunique() > 1:
                ax.legend(fontsize=6)
            fig.tight_layout()
            path = os.path.join(out_dir, f"{stem}_{metric}.png")
            atomic_savefig(fig, path, dpi=110)
            plt.close(fig)
            made.append((f"{metric} over training", path))
            break
    return made


def manifest_row(run):
    """The row of the run's sweep manifest.csv for its folder ({} outside a sweep)."""
    manifest = os.path.join(os.path.dirname(run.run_dir), "manifest.csv")
    if os.path.exists(manifest):
        import csv
        with open(manifest) as f:
            for row in csv.DictReader(f):
                if os.path.abspath(row.get("run_dir", "")) == os.path.abspath(run.run_dir):
                    return row
    return {}


def wall_seconds(run):
    """The run's own wall_time_s attribute, else the seconds its sweep's manifest.csv recorded for its folder."""
    own = run.attrs.get("wall_time_s")
    if own is not None:
        return float(own)
    seconds = manifest_row(run).get("seconds")
    return float(seconds) if seconds else float("nan")


def peak_memory_gib(run):
    """The job process's peak resident memory the sweep launcher measured (largest over its attempts), else NaN."""
    peak = manifest_row(run).get("peak_rss_gib")
    return float(peak) if peak else float("nan")


def provenance(runs):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commits = sorted({str(r.attrs.get("git_commit", "?"))[:12] + (" (dirty)" if r.attrs.get("git_dirty") == "true" else "")
                      for r in runs})
    cores = sorted({str(r.attrs.get("blas_core", "?")) for r in runs})
    wall = sum(w for w in (wall_seconds(r) for r in runs) if w == w)
    return [("generated", datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")),
            ("runs", str(len(runs))), ("git commits of the runs", ", ".join(commits)),
            ("machine", f"{platform.node()}, {cpu}, {os.cpu_count()} cores"), ("OpenBLAS core", ", ".join(cores)),
            ("summed wall time of the runs", f"{wall / 60:.1f} min")]


def html_table(frame):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = ["<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>" for _, row in frame.iterrows()]
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def md_table(frame):
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(fmt(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def section_key(run):
    return SECTION_OF.get(run.attrs.get("experiment", ""), (len(SECTIONS), "other", run.attrs.get("experiment", "?")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--out", default="results/report")
    parser.add_argument("--iclab", default=os.path.join(ROOT, "build", "iclab"))
    parser.add_argument("--title", default="iclab reproduction report")
    parser.add_argument("--page", default="docs/reproduction.md", help="repo path of the profile's page (README links)")
    parser.add_argument("--profile", default="quick", help="the profile named on the page")
    parser.add_argument("--unfinished", default="", help="folder of the parts' --dry-run listings (a partial report)")
    args = parser.parse_args()
    for folder in args.dirs:
        if not os.path.isdir(folder):
            parser.error(f"no folder {folder}")
    if not (os.path.isfile(args.iclab) and os.access(args.iclab, os.X_OK)):
        parser.error(f"--iclab {args.iclab} is not an executable file")
    if args.unfinished and os.path.exists(args.unfinished) and not os.path.isdir(args.unfinished):
        parser.error(f"--unfinished {args.unfinished} is not a folder")
    if not args.out or (os.path.lexists(args.out) and not os.path.isdir(args.out)):
        parser.error(f"--out {args.out!r} is not a folder")
    out_real = os.path.realpath(args.out)
    for folder in args.dirs:  # the report's folder is never an input run's folder, inside one, or above one
        real = os.path.realpath(folder)
        if out_real == real or out_real.startswith(real + os.sep) or real.startswith(out_real + os.sep):
            parser.error(f"--out {args.out} and the input {folder} overlap: the report goes in a folder of its own")
    out_dir = os.path.abspath(args.out)
    figure_dir = os.path.join(out_dir, "figures")
    os.makedirs(figure_dir, exist_ok=True)
    # top-level runs only: a run inside another run's folder (bias_training's sub-runs) is part of that run
    found = find_runs(args.dirs)
    paths = [d for d in found if not any(d != p and d.startswith(p + os.sep) for p in found)]
    if not paths:
        print("make_report: no finished run under " + " ".join(args.dirs), file=sys.stderr)
        return 2
    # iclab claims first: it reads every run's results.h5 through iclab's check of untrusted HDF5 files (a damaged file
    # can crash or hang the HDF5 library, docs/adapter_format.md), so h5py below only opens files that passed it.
    claims_csv = os.path.join(out_dir, "claims.csv")
    done = subprocess.run([args.iclab, "claims", *args.dirs, "--out", claims_csv, "--overwrite"], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"make_report: iclab claims failed: {done.stderr.strip()}", file=sys.stderr)
        return done.returncode or 1
    runs = sorted((load_run(d) for d in paths), key=lambda r: (section_key(r)[0], r.run_dir))
    claims = read_claims_csv(claims_csv)
    for c in claims:
        c["setting"] = relative(c["setting"])
        c["key"] = f"{c['setting']} :: {c['id']}"
    declared_runs = {c["setting"] for c in claims}
    for run in runs:
        if setting_of(run) not in declared_runs:
            claims += band_claims(run)
    claims.sort(key=lambda c: (PAPER_ORDER.index(c["paper"]) if c["paper"] in PAPER_ORDER else 99,
                               SECTION_OF.get(c.get("experiment", ""), (99,))[0]))
    summary = counts_text(claims)
    prov = provenance(runs)
    md = [f"# {args.title}", "", f"**{summary}** (verdicts: {VERDICTS_TEXT})", ""]
    md += [f"- {k}: {v}" for k, v in prov] + [""]
    body = [f"<h1>{html.escape(args.title)}</h1>", f"<p class='summary'><b>{html.escape(summary)}</b>. Verdicts: "
            f"{html.escape(VERDICTS_TEXT)}.</p>"]
    toc = ["<nav><b>Claims:</b> " + " · ".join(f'<a href="#claims-{anchor(p)}">{html.escape(p)}</a>' for p, _ in by_paper(claims)) +
           "<br><b>Sections:</b> "]
    link_html = "file://" + ROOT + "/"
    for paper, group in by_paper(claims):
        title = PAPER_TITLES.get(paper, "Other")
        body += [f'<h2 id="claims-{anchor(paper)}">Claims — {html.escape(title)} ({html.escape(counts_text(group))})</h2>',
                 claims_html(group, link_html)]
        md += [f"## Claims — {title} ({counts_text(group)})", "", claims_md(group, ""), ""]
    unfinished = read_parts(args.unfinished)
    body.append(unfinished_html(unfinished))
    body.append("<h2>Provenance</h2><ul>" + "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in prov) + "</ul>")
    sections = []
    for run in runs:
        stem = os.path.basename(run.run_dir)
        _, _, title = section_key(run)
        sid = anchor(stem)
        toc.append(f'<a href="#{sid}">{html.escape(title)}</a> · ')
        where = f"{setting_of(run)}, seed {run.attrs.get('seed', '?')}, run folder {run.run_dir}, wall time {fmt(wall_seconds(run))} s"
        md += [f"## {title}", "", where, ""]
        sections += [f'<h2 id="{sid}">{html.escape(title)}</h2><p>{html.escape(where)}</p>']
        for caption, path in figures_of(run, figure_dir, stem):
            rel = os.path.relpath(path, out_dir)
            md += [f"![{caption}]({rel})", ""]
            sections += [f'<figure><img src="{html.escape(rel)}" alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}'
                         "</figcaption></figure>"]
        for name in sorted(run.tables):
            frame = run.tables[name]
            md += [f"<details><summary>/tables/{name} ({len(frame)} rows)</summary>", "", md_table(frame), "", "</details>", ""]
            sections += [f"<details><summary>/tables/{html.escape(name)} ({len(frame)} rows)</summary>{html_table(frame)}</details>"]
    body.insert(2, "".join(toc) + "</nav>")
    body += sections
    style = ("body{font-family:sans-serif;margin:1.5em;max-width:1800px} .scroll{overflow-x:auto;max-width:100%} "
             "table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:12px} th,td{border:1px solid #bbb;padding:2px 6px;"
             "text-align:right;vertical-align:top} td.l{text-align:left} table.claims td{text-align:left;max-width:38em} "
             "th{background:#eee;position:sticky;top:0} td.ok{background:#d9f2d9} td.bad{background:#f6cccc} "
             "td.unsure{background:#fff2c6} td.na{background:#e4e4e4} img{width:100%;max-width:1400px} figure{margin:1em 0} nav{line-height:1.8}")
    atomic_write_text(os.path.join(out_dir, "report.md"), "\n".join(md) + "\n")
    with atomic_output(os.path.join(out_dir, "index.html")) as tmp, open(tmp, "w") as f:
        f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>iclab report</title><style>{style}</style></head>"
                f"<body>{''.join(body)}</body></html>\n")
    write_reproduction_page(out_dir, claims, prov, runs, args.title, args.profile, unfinished_md(unfinished))
    with atomic_output(os.path.join(out_dir, "readme_blocks.json")) as tmp, open(tmp, "w") as f:
        json.dump(readme_blocks(claims, args.title, args.page), f, indent=1, sort_keys=True)
    print(os.path.join(out_dir, "index.html"))
    return 0


def write_reproduction_page(out_dir, claims, prov, runs, title, profile, unfinished):
    """OUT/reproduction.md: what scripts/reproduce.sh commits as docs/reproduction.md (links relative to docs/)."""
    lines = [f"# {title}", "", "Generated by `scripts/reproduce.sh` from the report (scripts/report/make_report.py); do not edit.",
             f"`scripts/reproduce.sh --profile {profile} --check` fails when any verdict below changes.", "",
             f"**{counts_text(claims)}.** Verdicts: {VERDICTS_TEXT}. Per seed: the values the rule judged, in seed order "
             "(none for claims over instances); on the claimed side: k/n values for count rules. Kinds: *matches a printed "
             "number* (the paper's value is shown), *reproduces a qualitative claim* and *own check* (no paper value).", ""]
    lines += [f"- {k}: {v}" for k, v in prov] + [""]
    for paper, group in by_paper(claims):
        lines += [f"## {PAPER_TITLES.get(paper, 'Other')} ({counts_text(group)})", "", claims_md(group, "../"), ""]
    lines += unfinished
    lines += ["## Wall time and peak memory per run", "",
              "Peak memory: the run process's peak resident set, measured by the sweep launcher (empty for runs of older "
              "launchers).", "", "| section | setting | seed | wall time (s) | peak memory (GiB) |", "|---|---|---|---|---|"]
    for run in runs:
        peak = peak_memory_gib(run)
        lines.append(f"| {section_key(run)[2]} | {setting_of(run)} | {run.attrs.get('seed', '?')} | {fmt(wall_seconds(run))} | "
                     f"{fmt(peak) if peak == peak else ''} |")
    lines += ["", verdict_keys_block(claims), ""]
    atomic_write_text(os.path.join(out_dir, "reproduction.md"), "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
