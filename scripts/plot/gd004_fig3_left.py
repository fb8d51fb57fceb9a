"""Paper 004 Fig. 3 (left) / Fig. 8 from a gd004_example run's results.h5 (experiments/gd004_example/README.md).

Reads /tables/004_example_traj/{step, epoch, y_cl} and /tables/004_example/{y_true, y_tf, N}; draws the GD-CL
prediction against the SGD step with horizontal lines for the label ("True") and the layer's prediction
("Transformer"), and ticks at the epoch boundaries. Nothing is recomputed: the numbers are the run's.

    /usr/bin/python3 scripts/plot/gd004_fig3_left.py RUN_DIR [OUT.png]
"""
import sys
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 2:
        print("usage: gd004_fig3_left.py RUN_DIR [OUT.png]", file=sys.stderr)
        return 2
    run = Path(argv[1])
    results = run / "results.h5"
    if not results.exists():
        print(f"gd004_fig3_left.py: no {results}", file=sys.stderr)
        return 1
    with h5py.File(results, "r") as f:
        traj = f["tables/004_example_traj"]
        steps, epochs, y_cl = traj["step"][:], traj["epoch"][:], traj["y_cl"][:]
        example = f["tables/004_example"]
        n, y_true, y_tf = int(example["N"][0]), float(example["y_true"][0]), float(example["y_tf"][0])
    out = Path(argv[2]) if len(argv) > 2 else run / ("004_fig3_left_N15.png" if n == 15 else f"004_fig8_N{n}.png")
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
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
