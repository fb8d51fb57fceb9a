"""Paper 000 Figure 1 from a bias_training run's results.h5 (experiments/bias_training/README.md).

Reads /curves/<variant>_seed<k>/{step, train_loss, icl_accuracy, min_attention_denominator} and
/tables/runs; draws, per variant, the mean over seeds and the min-max band. Nothing is recomputed: the numbers
are the run's.
"""
import os
import sys
from collections import defaultdict
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output, positional, reading, run_results  # noqa: E402


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


USAGE = "usage: figure1.py RUN_DIR [OUT.png]"


def main(argv):
    args = positional(argv, USAGE, 1, 2, __doc__)
    run = Path(args[0])
    results = run_results(run, USAGE)
    out = check_output(args[1] if len(args) > 1 else run / "figure1.png", [results, run], USAGE, {".png", ".pdf", ".svg"})
    with reading(results, USAGE, "a bias_training run's results"), h5py.File(results, "r") as f:
        if text(f.attrs.get("experiment", "")) != "bias_training":
            print(f"{results} is not a bias_training run", file=sys.stderr)
            return 2
        runs = f["tables/runs"]
        variants = [text(v) for v in runs["variant"][:]]
        seeds = [int(s) for s in runs["seed"][:]]
        curves = defaultdict(list)  # variant -> [(step, loss, accuracy, denominator)]
        for variant, seed in zip(variants, seeds):
            g = f[f"curves/{variant}_seed{seed}"]
            den = g["min_attention_denominator"][:] if "min_attention_denominator" in g else np.full(len(g["step"]), np.nan)
            curves[variant].append((g["step"][:], g["train_loss"][:], g["icl_accuracy"][:], den))
        title = f"{run.name}: {len(set(seeds))} seeds per variant"

    panels = [("train_loss", 1, "training loss (repeated-trigger positions)", "log"),
              ("icl_accuracy", 2, "held-out ICL accuracy", "linear"),
              ("min normalizer", 3, "smallest attention normalizer", "symlog")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for variant in dict.fromkeys(variants):
        step = curves[variant][0][0]
        for ax, (name, column, label, scale) in zip(axes, panels):
            values = np.stack([c[column] for c in curves[variant]])
            mean = values.mean(axis=0)
            line, = ax.plot(step, mean, label=variant)
            ax.fill_between(step, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.2)
            ax.set_title(label)
            ax.set_xlabel("step")
            if scale == "symlog":
                ax.set_yscale(scale, linthresh=1e-2)  # the normalizer ends near 0.01 when it stays positive
            else:
                ax.set_yscale(scale)
    axes[2].axhline(0.0, color="black", linewidth=0.8)
    axes[1].legend(loc="lower right")
    fig.suptitle(title + " (mean over seeds, band: min-max)")
    fig.tight_layout()
    atomic_savefig(fig, out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
