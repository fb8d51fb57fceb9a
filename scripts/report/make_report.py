"""The reproduction report: every table of every run with the paper's value beside ours and a verdict, the
figures as PNG, and the provenance. Writes OUT/index.html, OUT/report.md and OUT/figures/*.png.

    /usr/bin/python3 scripts/report/make_report.py RUN_OR_SWEEP_DIR... --out results/report

A table declares how ours is judged against the paper in its attribute paper_bands, one line per pair of
columns: "OURS PAPER ratio T" (within a factor T) or "OURS PAPER abs T" (within T). Rows whose paper value is
missing (NaN) say "no paper value". Nothing is recomputed: every number is the run's results.h5.
"""
import argparse
import datetime
import html
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
from iclab_runs import find_runs, load_run  # noqa: E402

MAX_ROWS = 40      # tables longer than this show their first rows only
SHOWN_ROWS = 10


def fmt(value):
    if isinstance(value, str):
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


def bands_of(results, table):
    with h5py.File(results, "r") as f:
        text = f["tables"][table].attrs.get("paper_bands", "")
    text = text.decode() if isinstance(text, bytes) else text
    return [line.split() for line in text.splitlines() if len(line.split()) == 4]


def verdict(ours, paper, kind, tol):
    try:
        o, p = float(ours), float(paper)
    except (TypeError, ValueError):
        return "no paper value"
    if math.isnan(p):
        return "no paper value"
    if kind == "ratio":
        ok = p != 0 and o / p > 0 and 1 / float(tol) <= o / p <= float(tol)
    else:
        ok = abs(o - p) <= float(tol)
    return "within band" if ok else "OUTSIDE band"


def table_with_verdicts(run, name):
    frame = run.tables[name].copy()
    for ours, paper, kind, tol in bands_of(os.path.join(run.run_dir, "results.h5"), name):
        if ours in frame.columns and paper in frame.columns:
            label = f"verdict ({ours} vs {paper}, {kind} {tol})"
            frame[label] = [verdict(o, p, kind, tol) for o, p in zip(frame[ours], frame[paper])]
            # the paper's column right after ours, the verdict after both
            columns = [c for c in frame.columns if c not in (paper, label)]
            at = columns.index(ours) + 1
            frame = frame[columns[:at] + [paper, label] + columns[at:]]
    return frame


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
            fig.savefig(path, dpi=110)
            plt.close(fig)
            made.append((f"{metric} over training", path))
            break
    return made


def wall_seconds(run):
    """The run's own wall_time_s attribute, else the seconds its sweep's manifest.csv recorded for its folder."""
    own = run.attrs.get("wall_time_s")
    if own is not None:
        return float(own)
    manifest = os.path.join(os.path.dirname(run.run_dir), "manifest.csv")
    if os.path.exists(manifest):
        import csv
        with open(manifest) as f:
            for row in csv.DictReader(f):
                if os.path.abspath(row.get("run_dir", "")) == os.path.abspath(run.run_dir) and row.get("seconds"):
                    return float(row["seconds"])
    return float("nan")


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


def md_table(frame, shown):
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for _, row in frame.head(shown).iterrows():
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def html_table(frame, shown):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for _, row in frame.head(shown).iterrows():
        cells = []
        for value in row:
            text = fmt(value)
            cls = ' class="ok"' if text == "within band" else ' class="bad"' if text == "OUTSIDE band" else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--out", default="results/report")
    args = parser.parse_args()
    out_dir = os.path.abspath(args.out)
    figure_dir = os.path.join(out_dir, "figures")
    os.makedirs(figure_dir, exist_ok=True)
    # top-level runs only: a run inside another run's folder (bias_training's sub-runs) is part of that run
    found = find_runs(args.dirs)
    paths = [d for d in found if not any(d != p and d.startswith(p + os.sep) for p in found)]
    runs = [load_run(d) for d in paths]
    if not runs:
        print("make_report: no finished run under " + " ".join(args.dirs), file=sys.stderr)
        return 2
    md = ["# iclab reproduction report", ""] + [f"- {k}: {v}" for k, v in provenance(runs)] + [""]
    body = ["<h1>iclab reproduction report</h1><ul>"] + [f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>"
                                                          for k, v in provenance(runs)] + ["</ul>"]
    verdicts = {"within band": 0, "OUTSIDE band": 0}
    for run in runs:
        stem = os.path.basename(run.run_dir)
        title = f"{run.attrs.get('experiment', '?')}: {run.attrs.get('config_source', '')}"
        md += [f"## {title}", "", f"run folder `{run.run_dir}`, wall time {fmt(wall_seconds(run))} s", ""]
        body += [f"<h2>{html.escape(title)}</h2><p>run folder <code>{html.escape(run.run_dir)}</code>, wall time "
                 f"{html.escape(fmt(wall_seconds(run)))} s</p>"]
        for name in sorted(run.tables):
            frame = table_with_verdicts(run, name)
            for column in frame.columns:
                if column.startswith("verdict"):
                    for v in frame[column]:
                        if v in verdicts:
                            verdicts[v] += 1
            shown = len(frame) if len(frame) <= MAX_ROWS else SHOWN_ROWS
            note = "" if shown == len(frame) else f" (first {shown} of {len(frame)} rows)"
            md += [f"### /tables/{name}{note}", "", md_table(frame, shown), ""]
            body += [f"<h3>/tables/{html.escape(name)}{html.escape(note)}</h3>", html_table(frame, shown)]
        for caption, path in figures_of(run, figure_dir, stem):
            rel = os.path.relpath(path, out_dir)
            md += [f"![{caption}]({rel})", ""]
            body += [f'<figure><img src="{html.escape(rel)}" alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}'
                     "</figcaption></figure>"]
    summary = f"Verdicts: {verdicts['within band']} within the band the experiment declares, {verdicts['OUTSIDE band']} outside it."
    md.insert(2, summary)
    body.insert(1, f"<p><b>{html.escape(summary)}</b></p>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1400px} table{border-collapse:collapse;margin:0.5em 0 1.5em;"
             "font-size:12px} th,td{border:1px solid #bbb;padding:2px 6px;text-align:right} th{background:#eee} "
             "td.ok{background:#d9f2d9} td.bad{background:#f6cccc} img{max-width:640px}")
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out_dir, "index.html"), "w") as f:
        f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>iclab report</title><style>{style}</style></head>"
                f"<body>{''.join(body)}</body></html>\n")
    print(os.path.join(out_dir, "index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
