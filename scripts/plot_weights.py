#!/usr/bin/env python3
"""Plots the weight-deviation study written by `attndev train <study config>`.

Usage: scripts/plot_weights.py OUT_DIR [--tensor all] [-o FIGURE.png]

Reads OUT_DIR/weights_comparison.csv, OUT_DIR/ratios.csv and OUT_DIR/<run>/loss.csv and draws
three panels: W1 per pair over training steps (log scale), max|diff| per pair, and the ratios the
config asked for (e.g. low-precision W1 / flash W1), plus the loss curves. Every number comes from
the files; nothing is typed in here.
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
    except ValueError:
        return math.nan


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="output folder of the study")
    parser.add_argument("--tensor", default="all", help='tensor to plot (default "all": pooled)')
    parser.add_argument("-o", "--output", help="figure path (default OUT_DIR/weights.png)")
    args = parser.parse_args()

    comparison = os.path.join(args.out_dir, "weights_comparison.csv")
    if not os.path.exists(comparison):
        sys.exit(f"plot_weights.py: {comparison} not found: run `attndev train CONFIG -o "
                 f"{args.out_dir}` with a study config first")
    rows = [r for r in read_csv(comparison) if r["tensor"] == args.tensor]
    if not rows:
        sys.exit(f'plot_weights.py: no rows for tensor "{args.tensor}" in {comparison}')
    ratio_rows = []
    ratios_path = os.path.join(args.out_dir, "ratios.csv")
    if os.path.exists(ratios_path):
        # Columns by position: step, ratio_name, tensor, numerator_w1, denominator_w1, ratio.
        with open(ratios_path, newline="") as f:
            ratio_rows = [r for r in list(csv.reader(f))[1:] if len(r) == 6 and r[2] == args.tensor]

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w1 = defaultdict(list)
    max_diff = defaultdict(list)
    for r in rows:
        label = f'{r["pair"]} ({r["kind"]})'
        w1[label].append((int(r["step"]), as_float(r["w1"])))
        max_diff[label].append((int(r["step"]), as_float(r["max_abs_diff"])))
    ratios = defaultdict(list)
    for r in ratio_rows:
        ratios[r[1]].append((int(r[0]), as_float(r[5])))

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, series, title in ((axes[0][0], w1, "Wasserstein-1"), (axes[0][1], max_diff, "max |diff|")):
        for label, points in sorted(series.items()):
            points = [(s, v) for s, v in sorted(points) if v > 0 and math.isfinite(v)]
            if points:
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_title(f"{title} between runs ({args.tensor})")
        ax.legend(fontsize=8)
    ax = axes[1][0]
    for label, points in sorted(ratios.items()):
        points = [(s, v) for s, v in sorted(points) if math.isfinite(v)]
        if points:
            ax.plot(*zip(*points), marker="o", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_title("W1 ratios")
    ax.legend(fontsize=8)
    ax = axes[1][1]
    for run in sorted(os.listdir(args.out_dir)):
        loss_path = os.path.join(args.out_dir, run, "loss.csv")
        if os.path.exists(loss_path):
            loss = read_csv(loss_path)
            ax.plot([int(r["step"]) for r in loss], [as_float(r["loss"]) for r in loss], label=run,
                    linewidth=0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel("cross entropy (nats)")
    ax.set_title("training loss")
    ax.legend(fontsize=8)
    fig.tight_layout()
    output = args.output or os.path.join(args.out_dir, "weights.png")
    fig.savefig(output, dpi=120)
    print(output)


if __name__ == "__main__":
    main()
