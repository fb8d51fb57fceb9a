#!/usr/bin/python3
"""Paper 003 Figure 3 from `prefix_vs_causal_probes` runs: per-layer test error of the probes, prefix vs causal.

Also reads the in-run probes of `prefix_vs_causal` runs with prefix_vs_causal.probes: true (unpermuted runs of
--seed only; the claims over seeds are `iclab claims`' 003-F3 rows).

    /usr/bin/python3 scripts/python/prefix_vs_causal_figure3.py results/sweeps/cpu2_figure3 --png figure3.png

Prints per (task, setting) the probe error per depth and the spec §5 item 5 checks: the prefix curve ends below the
causal one, and (LR) the causal log-slope over the last third of the layers is flatter than the prefix one.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iclab_runs import load_run  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output  # noqa: E402

TASKS = {"linear": "LR", "sigmoid": "N-LR", "classification": "MC"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", help="folders holding prefix_vs_causal_probes runs")
    parser.add_argument("--png")
    parser.add_argument("--seed", type=int, default=0, help="the training seed of in-run probes to plot (default 0)")
    args = parser.parse_args()
    for folder in args.dirs:
        if not os.path.isdir(folder):
            parser.error(f"no folder {folder}")
    if args.png:  # checked before any work: a writable place, not a folder, not an input
        args.png = check_output(args.png, args.dirs, parser.format_usage().strip(), {".png", ".pdf", ".svg"})
    curves = {}
    for top in args.dirs:
        for root, _, files in os.walk(top):
            if "results.h5" not in files or "config.yaml" not in files:
                continue
            run = load_run(root)
            if "probes" not in run.tables:
                continue
            a, c = run.attrs, run.config
            if "task_kind" in a:  # a prefix_vs_causal_probes run
                kind, shared, l2, mask = a["task_kind"], int(a["shared_layers"]), float(a["context_output_l2"]), a["mask"]
            else:  # a prefix_vs_causal run with prefix_vs_causal.probes: true
                if c.get("train.permute_examples", "none") != "none" or int(c.get("seed", 0)) != args.seed:
                    continue
                kind, shared, l2, mask = c["task.kind"], bool(c["model.shared_layers"]), float(c["train.context_output_l2"]), c["model.mask"]
            setting = ("SL" if shared else "UL") + ("-L2" if l2 > 0 else "-no-L2")
            table = run.tables["probes"]
            column = "error_pct" if kind == "classification" else "query_mse"
            values = [v / 100.0 if column == "error_pct" else v for v in table[column]]  # the figure shows fractions
            curves[(kind, setting, mask)] = values
    for (kind, setting) in sorted({(k, s) for k, s, _ in curves}, key=lambda ks: (list(TASKS).index(ks[0]), ks[1])):
        pre, cau = curves.get((kind, setting, "prefix")), curves.get((kind, setting, "causal"))
        print("%s %s" % (TASKS[kind], setting))
        for mask, c in (("prefix", pre), ("causal", cau)):
            if c:
                print("  %-6s " % mask + " ".join("%.3g" % v for v in c))
        if pre and cau:
            L = len(pre) - 1
            first = L - max(1, L // 3)  # the last third of the layers
            slope = lambda c: (math.log10(c[first]) - math.log10(c[L])) / (L - first)  # decades per layer
            print("  prefix ends below causal: %s (%.3g vs %.3g); decades/layer over depths %d..%d: prefix %.3f, causal %.3f"
                  " -> causal flatter: %s" % (pre[-1] < cau[-1], pre[-1], cau[-1], first, L, slope(pre), slope(cau),
                                               slope(cau) < slope(pre)))
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = sorted({(k, s) for k, s, _ in curves}, key=lambda ks: (list(TASKS).index(ks[0]), ks[1]))
        fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.2), squeeze=False)
        for ax, (kind, setting) in zip(axes[0], keys):
            for mask, style in (("prefix", "-o"), ("causal", "-s")):
                c = curves.get((kind, setting, mask))
                if c:
                    ax.plot(range(len(c)), c, style, label=mask + "LM", markersize=3)
            ax.set_yscale("log")
            ax.set_xlabel("layer")
            ax.set_title("%s %s" % (TASKS[kind], setting))
            ax.legend()
        axes[0][0].set_ylabel("test error (probe)")
        fig.tight_layout()
        atomic_savefig(fig, args.png, dpi=120)
        print("wrote", args.png)


if __name__ == "__main__":
    main()
