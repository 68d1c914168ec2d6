#!/usr/bin/env python3
"""Plots the weight-deviation study written by `attndev train <study config>`.

Usage: scripts/plot_weights.py OUT_DIR [--tensor all] [-o FIGURE.png]

Reads OUT_DIR/pair_stats.csv and OUT_DIR/ratio_stats.csv (over replicates) and the runs'
loss.csv files, and draws four panels: W1 per pair over training steps (log scale), max|diff| per
pair (from weights_comparison.csv), the ratios the config asked for (e.g. low-precision W1 /
flash W1), and the loss curves. With several replicates a point is the mean over replicates, its
error bar one sample standard deviation and the shaded band the min-max range. Every number comes
from the files; nothing is typed in here.
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def as_float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def loss_files(out_dir):
    """(label, path) of every run's loss.csv: OUT_DIR/<run>/ or OUT_DIR/rep<r>/<run>/."""
    found = []
    for root, _dirs, files in os.walk(out_dir):
        if "loss.csv" in files:
            found.append((os.path.relpath(root, out_dir), os.path.join(root, "loss.csv")))
    return sorted(found)


def stats_series(rows, key):
    """{label: [(step, mean, std, min, max)]} from a *_stats.csv."""
    series = defaultdict(list)
    for r in rows:
        series[key(r)].append((int(r["step"]), as_float(r[mean_col(r)]), as_float(r[std_col(r)]),
                               as_float(r[min_col(r)]), as_float(r[max_col(r)])))
    return series


def mean_col(r):
    return "w1_mean" if "w1_mean" in r else "mean"


def std_col(r):
    return "w1_std" if "w1_std" in r else "std"


def min_col(r):
    return "w1_min" if "w1_min" in r else "min"


def max_col(r):
    return "w1_max" if "w1_max" in r else "max"


def draw(ax, series, log=True):
    for label, points in sorted(series.items()):
        points = [p for p in sorted(points) if math.isfinite(p[1]) and (p[1] > 0 or not log)]
        if not points:
            continue
        steps = [p[0] for p in points]
        means = [p[1] for p in points]
        stds = [p[2] if math.isfinite(p[2]) else 0.0 for p in points]
        # On a log axis a lower bar reaching <= 0 cannot be drawn: that half is left out (the
        # band still shows the smallest replicate).
        lower = [s if (not log or m - s > 0) else 0.0 for m, s in zip(means, stds)]
        line = ax.errorbar(steps, means, yerr=[lower, stds], marker="o", markersize=3, capsize=3,
                           label=label)
        lo = [p[3] for p in points]
        hi = [p[4] for p in points]
        if any(a != b for a, b in zip(lo, hi)):
            ax.fill_between(steps, lo, hi, alpha=0.15, color=line[0].get_color())
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.legend(fontsize=8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="output folder of the study")
    parser.add_argument("--tensor", default="all", help='tensor to plot (default "all": pooled)')
    parser.add_argument("-o", "--output", help="figure path (default OUT_DIR/weights.png)")
    args = parser.parse_args()

    pair_path = os.path.join(args.out_dir, "pair_stats.csv")
    if not os.path.exists(pair_path):
        sys.exit(f"plot_weights.py: {pair_path} not found: run `attndev train CONFIG -o "
                 f"{args.out_dir}` with a study config first")
    pairs = [r for r in read_csv(pair_path) if r["tensor"] == args.tensor]
    if not pairs:
        sys.exit(f'plot_weights.py: no rows for tensor "{args.tensor}" in {pair_path}')
    ratio_path = os.path.join(args.out_dir, "ratio_stats.csv")
    ratios = [r for r in read_csv(ratio_path) if r["tensor"] == args.tensor] \
        if os.path.exists(ratio_path) else []
    comparison = read_csv(os.path.join(args.out_dir, "weights_comparison.csv"))
    replicates = max((int(r["replicates"]) for r in pairs), default=1)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # max|diff| over replicates, from the per-replicate rows.
    per_step = defaultdict(lambda: defaultdict(list))
    for r in comparison:
        if r["tensor"] == args.tensor:
            per_step[f'{r["pair"]} ({r["kind"]})'][int(r["step"])].append(
                as_float(r["max_abs_diff"]))
    max_diff = defaultdict(list)
    for label, steps in per_step.items():
        for step, values in steps.items():
            values = [v for v in values if math.isfinite(v)]
            if not values:
                continue
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) \
                if len(values) > 1 else math.nan
            max_diff[label].append((step, mean, std, min(values), max(values)))

    suffix = f" (mean ± std over {replicates} replicates)" if replicates > 1 else ""
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    draw(axes[0][0], stats_series(pairs, lambda r: f'{r["pair"]} ({r["kind"]})'))
    axes[0][0].set_title(f"Wasserstein-1 between runs ({args.tensor}){suffix}", fontsize=10)
    draw(axes[0][1], max_diff)
    axes[0][1].set_title(f"max |diff| between runs ({args.tensor}){suffix}", fontsize=10)
    draw(axes[1][0], stats_series(ratios, lambda r: r["ratio_name"]))
    axes[1][0].set_title(f"W1 ratios{suffix}; band: min-max", fontsize=10)
    if replicates > 1:
        fig.text(0.5, 0.005, "error bars: one sample std (on log axes the lower half is left out "
                 "where it would reach 0); bands: min-max over replicates", ha="center", fontsize=8)
    ax = axes[1][1]
    colors = {}
    for label, path in loss_files(args.out_dir):
        run = os.path.basename(label)  # rep<r>/<run> -> <run>: one color and label per run
        loss = read_csv(path)
        first = run not in colors
        lines = ax.plot([int(r["step"]) for r in loss], [as_float(r["loss"]) for r in loss],
                        label=run if first else None, linewidth=0.6, alpha=0.8,
                        color=colors.get(run))
        colors.setdefault(run, lines[0].get_color())
    ax.set_xlabel("training step")
    ax.set_ylabel("cross entropy (nats)")
    ax.set_title("training loss" + (f" ({replicates} replicates per run)" if replicates > 1
                                    else ""), fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    output = args.output or os.path.join(args.out_dir, "weights.png")
    fig.savefig(output, dpi=120)
    print(output)


if __name__ == "__main__":
    main()
