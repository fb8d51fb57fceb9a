#!/usr/bin/python3
"""Plots docs/bench_history.csv (appended by scripts/bench/compare.sh) as docs/bench_history.png.

    /usr/bin/python3 scripts/bench/plot_history.py [HISTORY.csv] [OUT.png]

Four panels (stacked, legend beside them) per config, one point per compare.sh run in file order: the training-speed ratio against PyTorch
(min and median over the repetitions, with the 3.0x / 2.5x targets of issue 23), the whole-step GEMM-FLOP rate as a
fraction of the same run's faster square product and of OpenBLAS's sgemm alone, and the step-time spread (max/min over the repetitions) of iclab and of the PyTorch
reference timed alternately with it (when both move, the machine moved). Runs are
labelled by commit; a load average above the core count at the start marks the point hollow (measured under load).
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output, positional, usage_error  # noqa: E402

USAGE = "usage: plot_history.py [HISTORY.csv] [OUT.png]"


def number(text):
    """A field as a float; empty (a row back-filled from older tables) is NaN, which matplotlib leaves out."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def loaded(row, cores):
    try:
        return float(row["load_before"].split()[0]) > cores
    except (ValueError, IndexError):
        return False


def main():
    args = positional(sys.argv, USAGE, 0, 2, __doc__)
    path = args[0] if len(args) > 0 else "docs/bench_history.csv"
    if not os.path.isfile(path):
        usage_error(USAGE, f"no history file {path}")
    out = check_output(args[1] if len(args) > 1 else "docs/bench_history.png", [path], USAGE, {".png", ".pdf", ".svg"})
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            row["config"], row["date"], row["commit"]  # noqa: B018  (columns every row is plotted by)
    except (OSError, UnicodeDecodeError, csv.Error, KeyError, TypeError) as e:
        usage_error(USAGE, f"cannot read {path} as compare.sh's history: {type(e).__name__}: {e}")
    if not rows:
        sys.exit(f"plot_history: {path} has no rows")
    # a series per config and build: rows of a build for less than the CPU has (column build_simd, since 2026-11-27
    # 18:00; before, a note naming the build's flags, `-march=...`, e.g. an AVX2 build measured with compare.sh's
    # BUILD= and NOTE=) form a series of their own, named by the vector set (-march=haswell: AVX2)
    def series(r):
        simd = r.get("build_simd") or ""
        march = [w.strip("(),;") for w in r.get("note", "").split() if w.strip("(),;").startswith("-march=")]
        if not simd and march:
            simd = "AVX2" if march[0] == "-march=haswell" else march[0]
        return r["config"] + (f" [{simd} build]" if simd and simd != r.get("avx512") else "")
    configs = list(dict.fromkeys(series(r) for r in rows))
    # one x position per compare.sh run: its rows share the time stamp (written once per run), commit, core, repetitions
    # and note (the load differs per config within a run)
    run_key = lambda r: (r["date"], r["commit"], r["openblas_core"], r["repeats"], r.get("note", ""))
    runs = list(dict.fromkeys(run_key(r) for r in rows))
    cores = os.cpu_count() or 2
    fig, axes = plt.subplots(4, 1, figsize=(14, 17), sharex=True)
    # (title, solid column, its label, dashed column, its label)
    panels = [("train ratio vs PyTorch", "train_ratio_min", " (min)", "train_ratio_median", " (median)"),
              ("whole-step GEMM rate / the faster square product (OpenBLAS or iclab's kernel)", "step_over_sgemm_min", " (min)",
               "step_over_sgemm_median", " (median)"),
              ("whole-step GEMM rate / OpenBLAS's sgemm (issue 23's reference; recorded since 2026-11-27 14:26)",
               "step_over_openblas_min", " (min)", "step_over_openblas_median", " (median)"),
              ("step max/min over repetitions: iclab (solid), PyTorch timed alternately (dashed)", "iclab_step_spread", "",
               "torch_step_spread", " (PyTorch)")]
    for ax, (title, low, low_label, mid, mid_label) in zip(axes, panels):
        for i, config in enumerate(configs):
            mine = [r for r in rows if series(r) == config]
            x = [runs.index(run_key(r)) for r in mine]
            color = plt.get_cmap("tab20")(i % 20)
            label = config.replace("configs/", "").replace(".yaml", "").replace("iclab built ", "")
            hollow_points = [loaded(r, cores) for r in mine]
            ys = [number(r.get(low, "")) for r in mine]
            ax.plot(x, ys, "-", color=color, label=label + low_label if ax is axes[0] else None)
            for xi, yi, hollow in zip(x, ys, hollow_points):
                ax.plot([xi], [yi], "o", color=color, markerfacecolor="none" if hollow else color)
            ax.plot(x, [number(r.get(mid, "")) for r in mine], "--", color=color, alpha=0.6,
                    label=label + mid_label if ax is axes[0] else None)
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels([f"{key[0][:16].replace('T', ' ')} {key[1]}" for key in runs], rotation=60, ha="right", fontsize=7)
        ax.tick_params(axis="x", labelbottom=True)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].axhline(3.0, color="k", lw=0.8, ls=":")
    axes[0].axhline(2.5, color="grey", lw=0.8, ls=":")
    axes[1].axhline(0.8, color="k", lw=0.8, ls=":")
    axes[1].axhline(0.7, color="grey", lw=0.8, ls=":")
    axes[2].axhline(0.8, color="k", lw=0.8, ls=":")
    axes[2].axhline(0.7, color="grey", lw=0.8, ls=":")
    axes[3].axhline(1.10, color="k", lw=0.8, ls=":")
    axes[3].set_ylim(0.95, 2.0)  # a few early runs reached 3.8 (a host stall): clipped so the 1.10 bar stays readable
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the panels, not over them
    fig.suptitle(f"iclab bench history ({rows[-1]['cpu']}, {rows[-1]['avx512']}, OpenBLAS {rows[-1]['openblas_core']}; "
                 "hollow: load average above the core count at the start)", fontsize=9)
    fig.tight_layout()
    atomic_savefig(fig, out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
