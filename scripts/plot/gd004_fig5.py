"""Paper 004 Fig. 5 (left / centre / right) from a gd004_fig5 run's results.h5 (experiments/gd004_fig5/README.md):
the epoch train loss of every variant, mean ± std over the paired seeds, log y. Nothing is recomputed.

    /usr/bin/python3 scripts/plot/gd004_fig5.py RUN_DIR [OUT_DIR [PREFIX]]

Writes PREFIX004_fig5_left_reg.png, PREFIX004_fig5_center_aug.png, PREFIX004_fig5_right_neg.png and, when the
caveat's controls ran, PREFIX004_fig5_left_reg_controls.png (those whose tables exist) into OUT_DIR (default
RUN_DIR) and prints one path per line.
"""
import os
import sys
from pathlib import Path

import h5py
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output, check_output_folder, positional, reading, run_results  # noqa: E402

USAGE = "usage: gd004_fig5.py RUN_DIR [OUT_DIR [PREFIX]]"


def table(f, name):
    group = f[f"tables/{name}"]
    return {k: np.array([v.decode() if isinstance(v, bytes) else v for v in group[k][:]]) for k in group.keys()}


def band(ax, rows, variant, metric, label, **style):
    """Mean ± std over seeds of `metric` against epoch for one variant."""
    sel = rows["variant"] == variant
    epochs = np.unique(rows["epoch"][sel])
    values = np.array([[rows[metric][sel & (rows["seed"] == s) & (rows["epoch"] == e)][0] for e in epochs]
                       for s in np.unique(rows["seed"][sel])])
    mean, std = values.mean(axis=0), values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros(len(epochs))
    line, = ax.plot(epochs, mean, label=label, **style)
    ax.fill_between(epochs, np.maximum(mean - std, mean * 1e-2), mean + std, color=line.get_color(), alpha=0.12)


def panel(f, name, title, out, styles):
    rows = table(f, name)
    variants = list(dict.fromkeys(rows["variant"]))
    seeds = len(np.unique(rows["seed"]))
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    for i, variant in enumerate(variants):
        band(ax, rows, variant, "train_loss", variant, **styles(variant, i))
    ax.set_yscale("log")
    ax.set_xlabel("epoch (one SGD step per training sequence)")
    ax.set_ylabel("train loss (y_hat - y)^2, epoch mean")
    ax.set_title(f"{title} (mean ± std, {seeds} seeds)", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    atomic_savefig(fig, check_output(out, (), USAGE), dpi=110)
    plt.close(fig)
    return out


def reg_style(variant, i):
    alpha = float(variant.split("=")[1])
    cmap = plt.get_cmap("coolwarm")
    return {"color": "black" if alpha == 0 else cmap(0.5 + np.sign(alpha) * (0.2 + 0.3 * min(abs(alpha) / 0.5, 1))),
            "lw": 2 if alpha == 0 else 1.2}


def aug_style(variant, i):
    return {"color": "black" if variant == "none" else plt.get_cmap("tab10")(i), "lw": 2 if variant == "none" else 1.2}


def neg_style(variant, i):
    if variant == "beta=0":
        return {"color": "black", "lw": 2}
    k, beta = variant.split(",")
    colour = {"k=1": "tab:blue", "k=3": "tab:orange", "k=5": "tab:green"}.get(k, "tab:grey")
    dash = {"beta=0.05": ":", "beta=0.1": "-", "beta=0.2": "--"}.get(beta, "-.")
    return {"color": colour, "ls": dash, "lw": 1.2}


def controls(f, out):
    names = [(n, t) for n, t in (("004_fig5_reg", "Eq. 15, one task"), ("004_fig5_reg_eq14", "Eq. 14, one task"),
                                  ("004_fig5_reg_per_sequence", "Eq. 15, a task per sequence")) if f"tables/{n}" in f]
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 3.6), sharey=False)
    for ax, (name, title) in zip(np.atleast_1d(axes), names):
        rows = table(f, name)
        for i, variant in enumerate(dict.fromkeys(rows["variant"])):
            band(ax, rows, variant, "train_loss", variant, **reg_style(variant, i))
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3, which="both")
    np.atleast_1d(axes)[0].set_ylabel("train loss, epoch mean")
    np.atleast_1d(axes)[0].legend(fontsize=6)
    fig.tight_layout()
    atomic_savefig(fig, check_output(out, (), USAGE), dpi=110)
    plt.close(fig)
    return out


def main(argv):
    args = positional(argv, USAGE, 1, 3, __doc__)
    run = Path(args[0])
    results = Path(run_results(run, USAGE))
    out_dir = Path(check_output_folder(args[1] if len(args) > 1 else run, USAGE, args[2] if len(args) > 2 else ""))
    prefix = args[2] if len(args) > 2 else ""
    made = []
    with reading(results, USAGE, "a gd004_fig5 run's results"), h5py.File(results, "r") as f:
        for name, title, suffix, style in (("004_fig5_reg", "Fig. 5 left: regularized (Eq. 15), lr 0.003", "left_reg", reg_style),
                                           ("004_fig5_aug", "Fig. 5 centre: augmented, lr 0.005", "center_aug", aug_style),
                                           ("004_fig5_neg", "Fig. 5 right: negative samples, lr 0.005", "right_neg", neg_style)):
            if f"tables/{name}" in f:
                made.append(panel(f, name, title, out_dir / f"{prefix}004_fig5_{suffix}.png", style))
        if "tables/004_fig5_reg_eq14" in f or "tables/004_fig5_reg_per_sequence" in f:
            made.append(controls(f, out_dir / f"{prefix}004_fig5_left_reg_controls.png"))
    for path in made:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
