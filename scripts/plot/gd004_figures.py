"""Paper 004 Fig. 3 (centre / right), Figs. 4 / 9, 6, 7 and Fig. 10 from a gd004_figures run's results.h5
(experiments/gd004_figures/README.md). Nothing is recomputed: every number is the run's.

    /usr/bin/python3 scripts/plot/gd004_figures.py RUN_DIR [OUT_DIR [PREFIX]]

Writes PREFIX004_fig3_center_attn_err.png, _fig3_right_out_err.png, _fig4_heatmaps_T16.png (T = 32: _fig9_...),
_fig6_attn_by_R.png, _fig7_out_by_R.png, _fig10_reg_traj.png and _fig10_delta_vs_ncl.png (those whose tables
exist) into OUT_DIR (default RUN_DIR) and prints one path per line.
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

USAGE = "usage: gd004_figures.py RUN_DIR [OUT_DIR [PREFIX]]"


def table(f, name):
    group = f[f"tables/{name}"]
    return {k: (np.array([v.decode() if isinstance(v, bytes) else v for v in group[k][:]])) for k in group.keys()}


def error_panel(mean, metrics, out):
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.6))
    for ax, metric in zip(axes, metrics):
        for weights, style in (("trained", "-"), ("random", "--")):
            for feature, colour in (("prf", "tab:blue"), ("orf", "tab:orange")):
                sel = (mean["weights"] == weights) & (mean["feature"] == feature)
                if not sel.any():
                    continue
                r, m, s = mean["R"][sel], mean[f"{metric}_mean"][sel], mean[f"{metric}_std"][sel]
                ax.plot(r, m, style, color=colour, marker="o", ms=3, label=f"{feature.upper()}, {weights} weights")
                ax.fill_between(r, np.maximum(m - s, m * 1e-3), m + s, color=colour, alpha=0.12)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("R (d_r)")
        ax.set_ylabel(metric.replace("_", " ").upper())
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    atomic_savefig(fig, check_output(out, (), USAGE), dpi=110)
    plt.close(fig)
    return out


def heatmaps(f, names, title, out):
    present = [n for n in names if f"004_heatmaps/{n}" in f]
    fig, axes = plt.subplots(1, len(present), figsize=(2.8 * len(present), 2.9))
    for ax, name in zip(np.atleast_1d(axes), present):
        ax.imshow(f[f"004_heatmaps/{name}"][:], cmap="viridis")
        ax.set_title(name.replace("_R", " R=").replace("_exact", " exact"), fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=9)
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
    with reading(results, USAGE, "a gd004_figures run's results"), h5py.File(results, "r") as f:
        if "tables/004_dr_sweep_mean" in f:
            mean = table(f, "004_dr_sweep_mean")
            t = int(mean["T"][0])
            made.append(error_panel(mean, ["mse_attn", "mae_attn"], out_dir / f"{prefix}004_fig3_center_attn_err.png"))
            made.append(error_panel(mean, ["mse_out", "mae_out"], out_dir / f"{prefix}004_fig3_right_out_err.png"))
            fig_name = "fig4" if t == 16 else "fig9"
            made.append(heatmaps(f, ["A_exact", "A_R1200", "O_exact", "O_R1200"], f"T = {t}: exact softmax vs Performer R = 1200",
                                 out_dir / f"{prefix}004_{fig_name}_heatmaps_T{t}.png"))
            made.append(heatmaps(f, ["A_R3", "A_R12", "A_R120", "A_R12000", "A_exact"], f"attention matrix by R (T = {t})",
                                 out_dir / f"{prefix}004_fig6_attn_by_R.png"))
            made.append(heatmaps(f, ["O_R3", "O_R12", "O_R120", "O_R12000", "O_exact"], f"output W_V H A by R (T = {t})",
                                 out_dir / f"{prefix}004_fig7_out_by_R.png"))
        if "tables/004_fig10_traj" in f:
            traj = table(f, "004_fig10_traj")
            rows = table(f, "004_fig10")
            sel = (rows["seq"] == 0) & np.isclose(rows["alpha"], 0.01) & (rows["n_cl"] == 10) & (rows["reg_split"] == "per_sample")
            fig, ax = plt.subplots(figsize=(5.8, 3.6))
            ax.plot(traj["step"], traj["y_cl_per_sample"], color="tab:blue", label="GD-CL, alpha 0.01, per-sample split")
            ax.plot(traj["step"], traj["y_cl_per_step"], color="tab:purple", lw=0.8, label="GD-CL, alpha 0.01, per-step split")
            ax.plot(traj["step"], traj["y_cl_alpha0"], color="grey", lw=0.8, ls=":", label="GD-CL, alpha 0")
            if sel.any():
                ax.axhline(rows["y_tf_eq14"][sel][0], color="tab:red", ls="--", label="attention Eq. 14")
                ax.axhline(rows["y_tf_eq15"][sel][0], color="tab:orange", ls="-.", label="attention Eq. 15")
                ax.axhline(rows["y_true"][sel][0], color="tab:green", ls=":", label="True")
            ax.set_xlabel("SGD step (N_CL = 10 epochs)")
            ax.set_ylabel("prediction (y-slot)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
            fig.tight_layout()
            out = out_dir / f"{prefix}004_fig10_reg_traj.png"
            atomic_savefig(fig, check_output(out, (), USAGE), dpi=110)
            plt.close(fig)
            made.append(out)
            summary = table(f, "004_fig10_summary")
            fig, ax = plt.subplots(figsize=(5.4, 3.6))
            for alpha in sorted(set(summary["alpha"])):
                for split, style in (("per_sample", "-"), ("per_step", "--")):
                    s = np.isclose(summary["alpha"], alpha) & (summary["reg_split"] == split)
                    ax.plot(summary["n_cl"][s], summary["median_rel_deviation"][s], style, marker="o", ms=3,
                            label=f"alpha {alpha:g}, {split}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("N_CL")
            ax.set_ylabel("median relative deviation from Eq. 14")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=6)
            fig.tight_layout()
            out = out_dir / f"{prefix}004_fig10_delta_vs_ncl.png"
            atomic_savefig(fig, check_output(out, (), USAGE), dpi=110)
            plt.close(fig)
            made.append(out)
    for path in made:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
