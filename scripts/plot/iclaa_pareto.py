#!/usr/bin/env python3
"""ICLAA's memory / accuracy trade-off (spec iclaa.md §3) from an iclaa run: relative logit error and ICL accuracy
against the fp32 bytes per layer-head that stand for the prompt, one marker per method family, the exact prompt
cache as the reference point. Usage: iclaa_pareto.py RUN_DIR [OUT.png]  (default OUT: RUN_DIR/iclaa_pareto.png)"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output, positional, reading, run_results  # noqa: E402


def column(group, name):
    values = group[name][()]
    return [v.decode() if isinstance(v, bytes) else v for v in values]


USAGE = "usage: iclaa_pareto.py RUN_DIR [OUT.png]"


def main():
    args = positional(sys.argv, USAGE, 1, 2, __doc__)
    run_dir = args[0]
    results = run_results(run_dir, USAGE)
    out = check_output(args[1] if len(args) > 1 else os.path.join(run_dir, "iclaa_pareto.png"), [results, run_dir], USAGE,
                       {".png", ".pdf", ".svg"})
    with reading(results, USAGE, "an iclaa run's results"), h5py.File(results, "r") as f:
        t = f["tables"]["iclaa"]
        label, kind, convention = column(t, "method"), column(t, "kind"), column(t, "rope_convention")
        size, nbytes = column(t, "size"), column(t, "bytes_per_layer_head")
        rel, accuracy = column(t, "rel_error_mean"), column(t, "icl_accuracy")
        exact = float(f.attrs["exact_cache_bytes_per_layer_head"])
    styles = {"recent": ("tab:blue", "s"), "heavy": ("tab:cyan", "D"), "prf": ("tab:red", "o"), "orf": ("tab:orange", "^"),
              "elu1": ("tab:gray", "v"), "learned": ("tab:green", "*"), "hybrid": ("tab:purple", "X"),
              "exact cache": ("black", "P")}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for family, (color, marker) in styles.items():
        rows = [i for i in range(len(label)) if kind[i] == family and convention[i] in ("rotate_then_map", "-")]
        if not rows:
            continue
        rows.sort(key=lambda i: nbytes[i])
        xs = [nbytes[i] for i in rows]
        for ax, ys in ((axes[0], [rel[i] for i in rows]), (axes[1], [accuracy[i] for i in rows])):
            ax.plot(xs, ys, color=color, marker=marker, label=family, linewidth=1)
            if family == "learned" or family == "prf":
                for i in rows:
                    ax.annotate(f"F={size[i]}", (nbytes[i], ys[rows.index(i)]), fontsize=6, xytext=(3, 3),
                                textcoords="offset points")
    before = [i for i in range(len(label)) if kind[i] == "no prompt"]
    for ax, values, name in ((axes[0], rel, "relative logit error"), (axes[1], accuracy, "ICL accuracy (first triggers in X)")):
        if before:
            ax.axhline(values[before[0]], color="gray", linestyle=":", linewidth=1, label="no prompt")
        ax.axvline(exact, color="black", linestyle="--", linewidth=0.8, label="exact cache bytes")
        ax.set_xscale("log")
        ax.set_xlabel("fp32 bytes per layer-head standing for the prompt")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("ICLAA: error and ICL accuracy against bytes (exact prompt cache: error 0)", fontsize=9)
    fig.tight_layout()
    atomic_savefig(fig, out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
