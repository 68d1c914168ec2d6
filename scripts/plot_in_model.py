#!/usr/bin/env python3
"""Plots the in-model comparison written by `attndev train` with "shadow" variants.

Usage: scripts/plot_in_model.py DIR [--metric mean_abs] [-o FIGURE.png]

DIR is a run's folder or a study's folder (both hold in_model.csv). One column of panels per
layer: the deviation of every variant (the driving one and each shadow, on the same Q, K, V)
from the FP64 golden over training steps, all heads pooled; then the same divided by the driving
variant's deviation at that call. With several replicates a point is the mean over replicates and
its error bar one sample standard deviation. Every number comes from in_model.csv.
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict


def as_float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def mean_std(values):
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan, math.nan
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="run or study folder holding in_model.csv")
    parser.add_argument("--metric", default="mean_abs", choices=["max_abs", "mean_abs", "rmse"],
                        help="deviation from the golden to plot (default mean_abs)")
    parser.add_argument("-o", "--output", help="figure path (default DIR/in_model.png)")
    args = parser.parse_args()

    path = os.path.join(args.dir, "in_model.csv")
    if not os.path.exists(path):
        sys.exit(f"plot_in_model.py: {path} not found: train with a config that has \"shadow\" "
                 f"variants (e.g. configs/train/in-model-bf16.json) into {args.dir}")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["head"] == "all"]
    if not rows:
        sys.exit(f"plot_in_model.py: no rows in {path}")

    # (run, replicate, step, layer) -> driver's value, for the ratio panel.
    driver = {(r["run"], r["replicate"], r["step"], r["layer"]): as_float(r[args.metric])
              for r in rows if r["role"] == "driver"}
    # layer -> label -> step -> [value per replicate]
    value = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    ratio = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    runs = {r["run"] for r in rows}
    replicates = len({(r["run"], r["replicate"]) for r in rows}) // max(1, len(runs))
    for r in rows:
        label = r["variant"] + (" (driver)" if r["role"] == "driver" else "")
        if len(runs) > 1:
            label = f'{r["run"]}: {label}'
        layer, step = int(r["layer"]), int(r["step"])
        v = as_float(r[args.metric])
        value[layer][label][step].append(v)
        d = driver.get((r["run"], r["replicate"], r["step"], r["layer"]), math.nan)
        ratio[layer][label][step].append(v / d if d else math.nan)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = sorted(value)
    fig, axes = plt.subplots(2, len(layers), figsize=(6.5 * len(layers), 8), squeeze=False)
    suffix = f", mean ± std over {replicates} replicates" if replicates > 1 else ""
    for col, layer in enumerate(layers):
        for row, data, title, log in ((0, value, f"{args.metric} of O - golden", True),
                                      (1, ratio, f"{args.metric} / driver's", False)):
            ax = axes[row][col]
            for label, steps in sorted(data[layer].items()):
                points = sorted((s, *mean_std(vs)) for s, vs in steps.items())
                points = [p for p in points if math.isfinite(p[1]) and (p[1] > 0 or not log)]
                if not points:
                    continue
                ax.errorbar([p[0] for p in points], [p[1] for p in points],
                            yerr=[p[2] if math.isfinite(p[2]) else 0.0 for p in points],
                            marker="o", markersize=3, capsize=3, label=label)
            if log:
                ax.set_yscale("log")
            ax.set_xlabel("training step")
            ax.set_title(f"layer {layer}: {title}{suffix}", fontsize=10)
            ax.legend(fontsize=7)
    fig.tight_layout()
    output = args.output or os.path.join(args.dir, "in_model.png")
    fig.savefig(output, dpi=120)
    print(output)


if __name__ == "__main__":
    main()
