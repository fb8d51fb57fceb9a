"""The reproduction report: the claims first, laid out to be read in a minute (page_md.py / page_html.py): the
headline counts (by kind, the spec's gates apart, rules chosen after the first runs, leave-one-out and rounding), the
claims that do not reproduce one line each, then one compact table per paper (claim, statement, kind, ours, paper,
verdict, leave one out, rounding) with statements, rules, metrics, per-seed values and selection folded; the spec's
aggregate gates (gates.py) are rows computed from the others. Then one section per experiment in paper order with its
figures and raw tables folded. Writes OUT/index.html, OUT/report.md, OUT/reproduction.md (the page
scripts/reproduce.sh commits as docs/reproduction.md), OUT/readme_blocks.json, OUT/claims.csv and OUT/figures/*.png.

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
from progress import Progress  # noqa: E402
from script_io import atomic_output, atomic_savefig, atomic_write_text  # noqa: E402
from unfinished import read_parts, unfinished_html, unfinished_md  # noqa: E402
from claim_text import anchor, fmt  # noqa: E402
from gates import gate_claims  # noqa: E402
from page_html import STYLE as CLAIMS_STYLE, claims_page_html  # noqa: E402
from page_md import by_paper, claims_page_md, readme_blocks, reproduction_page  # noqa: E402
from verdicts import PAPER_ORDER, band_verdict, paper_group, read_claims_csv  # noqa: E402

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
    ("decay_attention", "beyond", "Beyond the papers: decayed linear attention (RetNet/GLA style) and its exact ICLCA"),
    ("prompt_baking", "beyond", "Beyond the papers: prompt baking beside ICLCA and ICLAA at equal bytes"),
    ("prompt_baking_lm", "beyond", "Beyond the papers: prompt baking beside ICLCA and ICLAA on the KJV language models"),
]
SECTION_OF = {name: (i, paper, title) for i, (name, paper, title) in enumerate(SECTIONS)}


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


def record_groups(runs, root=ROOT):
    """[(commit, dirty, families or None, runs)]: the runs grouped by commit (12 hex digits), dirty tree and the
    fingerprint families they depend on (scripts/report/families.py; None: every family), most runs first."""
    from collections import Counter
    from families import Families
    known = Families(root)
    counts = Counter((str(r.attrs.get("git_commit", "?"))[:12], str(r.attrs.get("git_dirty")) == "true", known.of_run(r.attrs))
                     for r in runs)
    return [(c, d, f, n) for (c, d, f), n in sorted(counts.items(), key=lambda item: (-item[1], item[0][0], sorted(item[0][2] or ())))]


def record_rows(groups):
    """The page's record table rows (scripts/report/measured_blocks.py judges the page by each row)."""
    from families import text_of
    return [(c + (" (dirty)" if d else ""), text_of(f).replace(",", ", "), str(n)) for c, d, f, n in groups]


def record_sentence(runs, root=ROOT):
    """Which commit computes every number of the page (issue 46, one commit of record). The checkout's commit (HEAD)
    does when every run was made at HEAD, or at a commit whose bits HEAD still computes for that run: every dataset
    line of tests/data/fingerprints.txt at that commit, of the fingerprint families the run depends on (its
    experiment's, scripts/report/families.py), is in HEAD's file (the rule of the age test, scripts/report/
    measured_blocks.py: a later commit that only added lines, or changed another family's, leaves the run's bits as
    they were). A run of a dirty tree, or whose families' lines moved, is named with its family and first moved line."""
    from measured_blocks import Fingerprints, families_phrase
    head = subprocess.run(["git", "-C", root, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True).stdout.strip()
    full = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    fingerprints = Fingerprints(root)
    at_head, older, moved = 0, {}, []
    for commit, dirty, families, n in record_groups(runs, root):
        runs_text = f"{n} run{'s' if n != 1 else ''}"
        if dirty:
            moved.append(f"{runs_text} at {commit[:7]} (dirty tree)")
            continue
        if commit != "?" and full.startswith(commit):
            at_head += n
            continue
        gone = fingerprints.missing(commit, families)
        if gone is None:
            entry = older.setdefault(commit[:7], [0, set(), False])
            entry[0] += n
            entry[2] = entry[2] or families is None
            entry[1] |= set(families or ())
        else:
            why = (f"family {gone.split(chr(9), 1)[0]}'s line '{gone[:60]}…' is not in {head}'s file" if "\t" in gone
                   else gone)  # else: no fingerprints at that commit (unknown to git)
            moved.append(f"{runs_text} at {commit[:7]} ({families_phrase(families)}; {why})")
    same = [f"{at_head} run{'s' if at_head != 1 else ''} at {head}"] if at_head else []
    for c, (n, fams, every) in older.items():
        whose = "fingerprint lines" if every else "families' fingerprint lines (" + ", ".join(sorted(fams)) + ")"
        same.append(f"{n} at {c}, whose {whose} are {head}'s")
    if not moved:
        return (f"Every number below is what commit {head} computes: " + "; ".join(same) + " (tests/data/fingerprints.txt, "
                "each run judged by the families of its experiment; the record table under Machine and runs).")
    return (f"**Not one commit of record:** {'; '.join(moved)} computed other bits than {head}"
            + (f"; {'; '.join(same)}" if same else "") + ". Rerun those runs at one commit.")


def run_facts(runs):
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


def section_title(run):
    return section_key(run)[2]


def section_anchor(title):
    return "section-" + anchor(title)


def navigation_html(claims, runs):
    """The report's navigation: the claims' opening lists and per-paper tables, then one link per section of runs (a
    section holds every run of its experiment: 572 runs of the quick profile are 16 links, not 572)."""
    titles = []
    for run in runs:  # runs come sorted by section
        if section_title(run) not in titles:
            titles.append(section_title(run))
    return ("<nav><b>Claims:</b> <a href=\"#failures\">not reproduced</a> · <a href=\"#undecided\">undecided</a> · "
            + " · ".join(f'<a href="#claims-{anchor(p)}">{html.escape(p)}</a>' for p, _ in by_paper(claims))
            + "<br><b>Sections:</b> " + " · ".join(f'<a href="#{section_anchor(t)}">{html.escape(t)}</a>' for t in titles)
            + "</nav>")


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
    progress = Progress("make_report")  # stderr (issue 44: the report of a profile takes minutes)
    progress.stage(f"iclab claims: pooling the claims of {len(paths)} runs")
    claims_csv = os.path.join(out_dir, "claims.csv")
    done = subprocess.run([args.iclab, "claims", *args.dirs, "--out", claims_csv, "--overwrite"], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"make_report: iclab claims failed: {done.stderr.strip()}", file=sys.stderr)
        return done.returncode or 1
    progress.stage(f"reading the tables of {len(paths)} runs")
    loaded = []
    for d in paths:
        loaded.append(load_run(d))
        progress.tick(len(loaded), len(paths), "runs")
    runs = sorted(loaded, key=lambda r: (section_key(r)[0], r.run_dir))
    claims = read_claims_csv(claims_csv)
    for c in claims:
        c["setting"] = relative(c["setting"])
        c["key"] = f"{c['setting']} :: {c['id']}"
        c["paper"] = paper_group(c["paper"])  # our own hypotheses (issue 43) in a group of their own
    declared_runs = {c["setting"] for c in claims}
    for run in runs:
        if setting_of(run) not in declared_runs:
            claims += band_claims(run)
    claims.sort(key=lambda c: (PAPER_ORDER.index(c["paper"]) if c["paper"] in PAPER_ORDER else 99,
                               SECTION_OF.get(c.get("experiment", ""), (99,))[0]))
    gates = gate_claims(claims)  # the spec's aggregate gates, counted from the rows (gates.py)
    facts = run_facts(runs)
    md = [f"# {args.title}", ""] + claims_page_md(claims, gates, "") + ["## Machine and runs", ""]
    md += [f"- {k}: {v}" for k, v in facts] + [""]
    # the navigation after the claims that do not reproduce: the first screen shows them (issue 45, "a page read in a minute")
    body = [f"<h1>{html.escape(args.title)}</h1>",
            claims_page_html(claims, gates, "file://" + ROOT + "/", anchor, navigation_html(claims, runs))]
    unfinished = read_parts(args.unfinished)
    body.append(unfinished_html(unfinished))
    body.append("<h2>Machine and runs</h2><ul>" + "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in facts)
                + "</ul>")
    sections = []
    progress.stage(f"figures and raw tables of {len(runs)} runs")
    title = None
    for done_runs, run in enumerate(runs, 1):
        progress.tick(done_runs - 1, len(runs), "runs")  # the runs finished before this one
        stem = os.path.basename(run.run_dir)
        if section_title(run) != title:  # one heading per section, one sub-heading per run
            title = section_title(run)
            md += [f"## {title}", ""]
            sections += [f'<h2 id="{section_anchor(title)}">{html.escape(title)}</h2>']
        sid = anchor(stem)
        where = f"{setting_of(run)}, seed {run.attrs.get('seed', '?')}, run folder {run.run_dir}, wall time {fmt(wall_seconds(run))} s"
        md += [f"### {setting_of(run)}, seed {run.attrs.get('seed', '?')}", "", where, ""]
        sections += [f'<h3 id="{sid}">{html.escape(setting_of(run))}, seed {html.escape(str(run.attrs.get("seed", "?")))}</h3>'
                     f"<p>{html.escape(where)}</p>"]
        for caption, path in figures_of(run, figure_dir, stem):
            rel = os.path.relpath(path, out_dir)
            md += [f"![{caption}]({rel})", ""]
            sections += [f'<figure><img src="{html.escape(rel)}" alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}'
                         "</figcaption></figure>"]
        for name in sorted(run.tables):
            frame = run.tables[name]
            md += [f"<details><summary>/tables/{name} ({len(frame)} rows)</summary>", "", md_table(frame), "", "</details>", ""]
            sections += [f"<details><summary>/tables/{html.escape(name)} ({len(frame)} rows)</summary>{html_table(frame)}</details>"]
    progress.tick(len(runs), len(runs), "runs")
    progress.stage("writing the report and the page")
    body += sections
    style = ("body{font-family:sans-serif;margin:1.5em;max-width:1800px} .scroll{overflow-x:auto;max-width:100%} "
             "table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:12px} th,td{border:1px solid #bbb;padding:2px 6px;"
             "text-align:right;vertical-align:top} td.l{text-align:left} th{background:#eee;position:sticky;top:0} "
             "img{width:100%;max-width:1400px} figure{margin:1em 0} nav{line-height:1.8} " + CLAIMS_STYLE)
    atomic_write_text(os.path.join(out_dir, "report.md"), "\n".join(md) + "\n")
    with atomic_output(os.path.join(out_dir, "index.html")) as tmp, open(tmp, "w") as f:
        f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>iclab report</title><style>{style}</style></head>"
                f"<body>{''.join(body)}</body></html>\n")
    run_rows = [(section_key(r)[2], setting_of(r), str(r.attrs.get("seed", "?")), fmt(wall_seconds(r)),
                 fmt(peak_memory_gib(r)) if peak_memory_gib(r) == peak_memory_gib(r) else "") for r in runs]
    atomic_write_text(os.path.join(out_dir, "reproduction.md"),
                      reproduction_page(claims, gates, facts, args.title, args.profile, unfinished_md(unfinished), run_rows,
                                        record_sentence(runs), record_rows(record_groups(runs))))
    with atomic_output(os.path.join(out_dir, "readme_blocks.json")) as tmp, open(tmp, "w") as f:
        json.dump(readme_blocks(claims, args.title, args.page, gates), f, indent=1, sort_keys=True)
    print(os.path.join(out_dir, "index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
