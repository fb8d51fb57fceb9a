#!/usr/bin/python3
"""Paper 003 Figure 6 (App. E.3) from `prefix_vs_causal` runs: test and train-pool error against the training pool size.

    /usr/bin/python3 scripts/python/prefix_vs_causal_figure6.py results/sweeps/prefix_vs_causal_figure6 \
        results/sweeps/prefix_vs_causal_table3 --png figure6.png

Takes the SL-L2 runs without permuted ICEs (the figure's models, spec B3) of every folder, groups them by task, seed
and pool size (in batches: task.pool_sequences / train.batch_size) and prints per task and seed the table and the
spec §5 item 6 checks: both test errors decrease with the pool — declared as a rank test over every pool size, not
the end points (scripts/python/rank_test.py: Kendall's tau of pool size and test error, exact one-sided p <= 0.05;
with 5 pools at most one pair out of order), the claim holding in >= 2 of 3 seeds —, prefix <= causal at the largest
pool, train-pool error < test error at the smallest pool (memorisation), and the pool size of the largest
causal/prefix ratio (MC: gap), reported, not gated. The verdicts of record are the declared claims "003-F6 ..." of
runs with prefix_vs_causal.figure6_pools (`iclab claims`, the report; configs/reproduce/*_figure6_prefix_vs_causal.yaml);
this script is their independent cross-check and the figure.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iclab_runs import load_runs  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from script_io import atomic_savefig, check_output  # noqa: E402
from prefix_vs_causal_table import TASKS, fmt, permuted, setting, value  # noqa: E402
from rank_test import ALPHA, falls  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--png")
    args = parser.parse_args()
    for folder in args.dirs:
        if not os.path.isdir(folder):
            parser.error(f"no folder {folder}")
    if args.png:  # checked before any work: a writable place, not a folder, not an input
        args.png = check_output(args.png, args.dirs, parser.format_usage().strip(), {".png", ".pdf", ".svg"})
    runs = load_runs(args.dirs)
    runs = runs[runs["experiment"] == "prefix_vs_causal"]
    points = {}  # (task, mask, seed) -> {batches: (test, train_pool)}
    for _, row in runs.iterrows():
        if setting(row) != "SL-L2" or permuted(row):
            continue
        batches = int(row["task.pool_sequences"]) // int(row["train.batch_size"])
        points.setdefault((row["task.kind"], row["model.mask"], int(row["seed"])), {})[batches] = (value(row, "test"), value(row, "train_pool"))
    seeds = sorted({seed for (_, _, seed) in points})
    held = {}  # (task, mask) -> [holds per seed]
    for kind, seed in [(k, s) for k in TASKS for s in seeds]:
        pre, cau = points.get((kind, "prefix", seed), {}), points.get((kind, "causal", seed), {})
        if not pre and not cau:
            continue
        mc = kind == "classification"
        print("\n%s, SL-L2, seed %d (%s)\n" % (TASKS[kind], seed, "error %" if mc else "query MSE"))
        print("| pool (batches) | prefix test | causal test | prefix train pool | causal train pool | causal/prefix |")
        print("|---|---|---|---|---|---|")
        sizes = sorted(set(pre) | set(cau))
        gaps = {}
        for b in sizes:
            p, c = pre.get(b, (float("nan"),) * 2), cau.get(b, (float("nan"),) * 2)
            gaps[b] = (c[0] - p[0]) if mc else c[0] / p[0]
            print("| %d | %s | %s | %s | %s | %s |" % (b, fmt(p[0], mc), fmt(c[0], mc), fmt(p[1], mc), fmt(c[1], mc),
                                                       ("%+.1f pt" if mc else "%.2f") % gaps[b]))
        for mask, curve in (("prefix", pre), ("causal", cau)):
            if len(curve) >= 2:
                xs = sorted(curve)
                test = [curve[b][0] for b in xs]
                tau, p, holds = falls(xs, test)
                held.setdefault((kind, mask), []).append(holds)
                print("- %s: test error falls with the pool (rank test over %d pools): %s, Kendall tau = %.2f, one-sided p = %.3f "
                      "(rule p <= %.2f); train pool < test at the smallest pool: %s (%s vs %s)" % (
                          mask, len(xs), holds, tau, p, ALPHA,
                          curve[xs[0]][1] < curve[xs[0]][0], fmt(curve[xs[0]][1], mc), fmt(curve[xs[0]][0], mc)))
        both = [b for b in sizes if b in pre and b in cau]
        if both:
            top = both[-1]
            print("- prefix <= causal at the largest pool (%d): %s; largest %s at %d batches (paper: LR 30, N-LR 100, MC 10)" % (
                top, pre[top][0] <= cau[top][0], "gap" if mc else "ratio", max(both, key=lambda b: gaps[b])))
    if held:
        print("\nErrors fall with the pool (rank test; claim: in >= 2 of 3 seeds):")
        for (kind, mask), holds in held.items():
            verdict = "reproduced" if sum(holds) >= 2 else "inconclusive" if len(holds) < 3 and sum(holds) + 3 - len(holds) >= 2 \
                else "not reproduced"
            print("- %s %s: %d of %d seeds -> %s" % (TASKS[kind], mask, sum(holds), len(holds), verdict))
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        kinds = [k for k in TASKS if (k, "prefix", seeds[0]) in points or (k, "causal", seeds[0]) in points]
        fig, axes = plt.subplots(1, len(kinds), figsize=(4 * len(kinds), 3.2), squeeze=False)
        for ax, kind in zip(axes[0], kinds):
            scale = 0.01 if kind == "classification" else 1.0  # the paper plots MC error as a fraction
            for mask, colour in (("prefix", "C0"), ("causal", "C1")):
                curve = points.get((kind, mask, seeds[0]), {})  # the first seed's curves
                xs = sorted(curve)
                ax.plot(xs, [curve[b][0] * scale for b in xs], "-o", color=colour, label=mask + "LM test", markersize=3)
                ax.plot(xs, [curve[b][1] * scale for b in xs], "--", color=colour, label=mask + "LM train pool")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("training sequences (batches of 64)")
            ax.set_title(TASKS[kind] + " SL-L2")
            ax.legend(fontsize=7)
        axes[0][0].set_ylabel("query error")
        fig.tight_layout()
        atomic_savefig(fig, args.png, dpi=120)
        print("wrote", args.png)


if __name__ == "__main__":
    main()
