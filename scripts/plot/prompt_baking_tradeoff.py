#!/usr/bin/env python3
"""Prompt baking beside ICLCA and ICLAA (experiments/prompt_baking/README.md) from prompt_baking runs (seeds of the
linear and/or the softmax config): KL to the model with the prompt and ICL accuracy against the fp32 bytes that stand
for the prompt, one point per method and model kind (the mean over the runs of each run's mean over its pairs).
Exact methods have KL 0 and are drawn at the floor 1e-6; the
no-prompt rows (0 bytes) are horizontal lines. Usage: prompt_baking_tradeoff.py OUT.png RUN_DIR [RUN_DIR ...]"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output, positional, reading, run_results  # noqa: E402

USAGE = "usage: prompt_baking_tradeoff.py OUT.png RUN_DIR [RUN_DIR ...]"
FLOOR = 1e-6
STYLES = {"before": ("gray", "o"), "iclca": ("black", "P"), "cache": ("black", "D"), "iclaa": ("tab:red", "o"),
          "hybrid": ("tab:purple", "X"), "bake_biases": ("tab:blue", "s"), "bake_lora": ("tab:green", "*")}


def column(group, name):
    values = group[name][()]
    return [v.decode() if isinstance(v, bytes) else v for v in values]


def main():
    args = positional(sys.argv, USAGE, 2, 64, __doc__)
    runs = args[1:]
    results = [run_results(run, USAGE) for run in runs]
    out = check_output(args[0], results + runs, USAGE, {".png", ".pdf", ".svg"})
    points = {}  # (model kind, method) -> [kind, bytes, [kl...], [accuracy...]]
    for path in results:
        with reading(path, USAGE, "a prompt_baking run's results"), h5py.File(path, "r") as f:
            t = f["tables"]["methods"]
            method, kind = column(t, "method"), column(t, "kind")
            nbytes, kl, accuracy = column(t, "bytes_fp32"), column(t, "kl"), column(t, "icl_accuracy")
        model = "linear" if "iclca" in kind else "softmax"
        for i, m in enumerate(method):
            p = points.setdefault((model, m), [kind[i], float(nbytes[i]), [], []])
            p[2].append(float(kl[i]))
            p[3].append(float(accuracy[i]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for (model, m), (kind, nbytes, kls, accuracies) in sorted(points.items()):
        color, marker = STYLES.get(kind, ("tab:orange", "o"))
        filled = "full" if model == "softmax" else "none"
        values = (max(sum(kls) / len(kls), FLOOR), sum(accuracies) / len(accuracies))
        if kind == "before":  # 0 bytes: a horizontal line per model kind
            for ax, y in zip(axes, values):
                ax.axhline(y, color="gray", linestyle="--" if model == "linear" else ":", linewidth=1)
                ax.annotate(f"{model[:3]}: no prompt", (1.05e4, y), fontsize=6, xytext=(0, 2), textcoords="offset points")
            continue
        x = nbytes
        for ax, y in zip(axes, values):
            ax.plot([x], [y], color=color, marker=marker, fillstyle=filled, linestyle="", markersize=7)
            ax.annotate(f"{model[:3]}: {m}", (x, y), fontsize=6, xytext=(4, 2), textcoords="offset points")
    for ax, name in ((axes[0], "KL(model with prompt || method), mean over positions"), (axes[1], "ICL accuracy (first triggers in X)")):
        ax.set_xscale("log")
        ax.set_xlabel("fp32 bytes standing for the prompt (whole model)")
        ax.set_xlim(1e4, 3e5)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    fig.suptitle(f"prompt baking vs exact ICLCA (linear, hollow) and ICLAA (softmax, filled); {len(runs)} runs; "
                 f"KL 0 drawn at {FLOOR:g}", fontsize=9)
    fig.tight_layout()
    atomic_savefig(fig, out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
