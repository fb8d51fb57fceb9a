"""Paper 004 Fig. 3 (left) / Fig. 8 from a gd004_example run's results.h5 (experiments/gd004_example/README.md).

Reads /tables/004_example_traj/{step, epoch, y_cl} and /tables/004_example/{y_true, y_tf, N}; draws the GD-CL
prediction against the SGD step with horizontal lines for the label ("True") and the layer's prediction
("Transformer"), and ticks at the epoch boundaries. Nothing is recomputed: the numbers are the run's.

    /usr/bin/python3 scripts/plot/gd004_fig3_left.py RUN_DIR [OUT.png]
"""
import os
import sys
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output, positional, reading, run_results  # noqa: E402


USAGE = "usage: gd004_fig3_left.py RUN_DIR [OUT.png]"


def main(argv):
    args = positional(argv, USAGE, 1, 2, __doc__)
    run = Path(args[0])
    results = run_results(run, USAGE)
    if len(args) > 1:  # checked before reading; the default name depends on N
        check_output(args[1], [results, run], USAGE, {".png", ".pdf", ".svg"})
    with reading(results, USAGE, "a gd004_example run's results"), h5py.File(results, "r") as f:
        traj = f["tables/004_example_traj"]
        steps, epochs, y_cl = traj["step"][:], traj["epoch"][:], traj["y_cl"][:]
        example = f["tables/004_example"]
        n, y_true, y_tf = int(example["N"][0]), float(example["y_true"][0]), float(example["y_tf"][0])
    out = check_output(args[1] if len(args) > 1 else run / ("004_fig3_left_N15.png" if n == 15 else f"004_fig8_N{n}.png"),
                       [results, run], USAGE, {".png", ".pdf", ".svg"})
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.plot(steps, y_cl, color="tab:blue", label="GD-CL (reference model)")
    ax.axhline(y_true, color="tab:green", linestyle="--", label="True")
    ax.axhline(y_tf, color="tab:red", linestyle=":", label="Transformer")
    boundaries = [s for s, e in zip(steps, epochs) if s % n == 0]
    ax.set_xticks(boundaries[:: max(1, len(boundaries) // 10)])
    ax.set_xlabel(f"SGD step (epochs of N = {n} steps)")
    ax.set_ylabel("prediction")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    atomic_savefig(fig, out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
