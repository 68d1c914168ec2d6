#!/usr/bin/env python3
"""Draw the reproduced figures from an `attndev run` folder (results.csv), as PNG and SVG.

    scripts/plot.py RESULTS_DIR [RESULTS_DIR ...] [-o OUT_DIR] [--dpi N]

The kind of figure is chosen from the experiment name in RESULTS_DIR/results.json (or the folder
name): golden2024-fig3/4/5/6a/6b/6c, golden2024-fig4-5-distribution, fa3-table3. The stage
attribution (configs/analysis/attribution.json) draws itself: `attndev attribute CONFIG -o DIR`.
Figures go to -o (default: RESULTS_DIR itself, so a run never overwrites the committed
docs/figures by accident; scripts/reproduce.sh names the folder).
Every value plotted is the mean over trials of a metric of rows with status "ok"; nothing is typed
in except the published FA-3 RMSE values, drawn as markers next to ours and labelled as published.

The line panels (Figs. 4-5 per distribution, 5 and 6) are drawn by draw_pivot.draw_panel, the code that draws
`attndev plot` figures; for an experiment that is not one of these, use `attndev plot`
(docs/plot.md), which needs no layout here.
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from draw_pivot import draw_panel  # noqa: E402

# FA-3 (Shah et al. 2024), Table 3, RMSE vs FP64: what the paper reports, for comparison markers.
FA3_PUBLISHED = {
    "baseline-fp16": 3.2e-4,
    "fa2-fp16": 1.9e-4,
    "baseline-fp8": 2.4e-2,
    "baseline-fp8-p-e4m3": 2.4e-2,  # the same published baseline, under our second reading
    "fa3-fp8": 9.1e-3,
    "fa3-fp8-no-block-quant": 9.3e-3,
    "fa3-fp8-no-incoherent": 2.4e-2,
}


def read_rows(folder):
    path = os.path.join(folder, "results.csv")
    if not os.path.exists(path):
        sys.exit(f"plot.py: {path} does not exist; run `attndev run CONFIG -o {folder}` first")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("status") == "ok"]
    if not rows:
        sys.exit(f"plot.py: {path} has no rows with status ok: nothing to plot")
    return rows


def experiment_name(folder):
    path = os.path.join(folder, "results.json")
    try:
        with open(path) as f:
            doc = json.load(f)
        if isinstance(doc.get("config_name"), str):
            return doc["config_name"]
        for key in ("config", "experiment"):
            v = doc.get(key)
            if isinstance(v, dict) and "name" in v:
                return v["name"]
        if "name" in doc:
            return doc["name"]
    except (OSError, ValueError, AttributeError):
        pass
    return os.path.basename(os.path.normpath(folder))


def mean_by(rows, keys, metric):
    """{(key values..., variant): mean of metric over trials}."""
    acc = defaultdict(list)
    for r in rows:
        try:
            v = float(r[metric])
        except (KeyError, ValueError):
            continue
        acc[tuple(r[k] for k in keys) + (r["variant"],)].append(v)
    return {k: sum(v) / len(v) for k, v in acc.items()}


def variants_in_order(rows):
    seen = []
    for r in rows:
        if r["variant"] not in seen:
            seen.append(r["variant"])
    return seen


def positive(v):
    return v if v > 0 else float("nan")


def save(fig, out_dir, stem, dpi):
    os.makedirs(out_dir, exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out_dir, f"{stem}.{ext}"), dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    print(os.path.join(out_dir, stem + ".png"))


def plot_formats(rows, name, out_dir, dpi):
    """Fig. 3: Flash vs Baseline directly per format (ref_max_abs = max |O_flash - O_baseline|, the
    figure's quantity), beside each algorithm against the FP64 golden (log y)."""
    formats = ["bf16", "fp16", "fp32", "fp64"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    panels = (("ref_max_abs", ("flash1", "flash2"), "max |flash - baseline| (same format)"),
              ("max_abs", ("baseline", "flash1", "flash2"), "max_abs vs FP64 golden"))
    for ax, (metric, algs, label) in zip(axes, panels):
        m = mean_by(rows, [], metric)
        for alg in algs:
            ys = [positive(m.get((f"{alg}-{f}",), float("nan"))) for f in formats]
            ax.plot(formats, ys, marker="o", label=alg)
        ax.set_yscale("log")
        ax.set_xlabel("number format")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.subplots_adjust(wspace=0.35)
    fig.suptitle("Golden et al. Fig. 3 (reproduced): Flash vs Baseline by format", y=1.03)
    save(fig, out_dir, name, dpi)


def plot_bars(rows, name, out_dir, dpi, metric, title, published=None):
    m = mean_by(rows, [], metric)
    variants = variants_in_order(rows)
    ys = [positive(m.get((v,), float("nan"))) for v in variants]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(variants)), 3.6))
    ax.bar(range(len(variants)), ys, color="tab:blue", label="attndev (mean over trials)")
    if published:
        xs = [i for i, v in enumerate(variants) if v in published]
        ax.scatter(xs, [published[variants[i]] for i in xs], color="tab:red", marker="_", s=600,
                   linewidths=3, zorder=3, label="published")
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels(variants, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel(f"{metric} vs FP64 golden")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend()
    ax.set_title(title)
    save(fig, out_dir, name, dpi)


def plot_seqlen(rows, name, out_dir, dpi):
    """Fig. 5: max, mean, std of |difference| vs N (log-log)."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    variants = variants_in_order(rows)
    for i, (ax, metric) in enumerate(zip(axes, ("max_abs", "mean_abs", "std_abs"))):
        m = mean_by(rows, ["seq_len"], metric)
        lines = []
        for v in variants:
            pts = sorted((int(k[0]), y) for k, y in m.items() if k[1] == v)
            lines.append((v, [(p[0], positive(p[1]), None, None) for p in pts]))
        draw_panel(ax, lines, "none", "sequence length N", "", title=metric, logx=True, logy=True,
                   legend=i == 0)
    fig.suptitle("Golden et al. Fig. 5 (reproduced): deviation vs sequence length, bf16", y=1.03)
    save(fig, out_dir, name, dpi)


def plot_distribution(rows, name, out_dir, dpi):
    """Figs. 4-5 per input distribution: each variant's max and mean deviation over the
    baseline's, vs N, one line per (variant, distribution); the baseline (ratio 1) left out."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    variants = [v for v in variants_in_order(rows)
                if any(r["variant"] == v and r.get("ratio_max_abs") not in ("", "1") for r in rows)]
    distributions = []
    for r in rows:
        if r["distribution"] not in distributions:
            distributions.append(r["distribution"])
    for i, (ax, metric) in enumerate(zip(axes, ("ratio_max_abs", "ratio_mean_abs"))):
        m = mean_by(rows, ["seq_len", "distribution"], metric)
        lines = []
        for v in variants:
            for dist in distributions:
                pts = sorted((int(k[0]), y) for k, y in m.items() if k[1] == dist and k[2] == v)
                lines.append((f"{v}, {dist}", [(p[0], positive(p[1]), None, None) for p in pts]))
        draw_panel(ax, lines, "none", "sequence length N", "", title=metric + " (to the baseline)",
                   logx=True, logy=True, legend=i == 0)
    fig.suptitle("Golden et al. Figs. 4-5 per input distribution: Flash / Baseline, bf16", y=1.03)
    save(fig, out_dir, name, dpi)


def plot_tiles(rows, name, out_dir, dpi, title):
    """Fig. 6: deviation per tile shape Br x Bc, in the config's order."""
    tiles = []
    for r in rows:
        t = (r["block_r"], r["block_c"])
        if t not in tiles:
            tiles.append(t)
    labels = [f"{a}x{b}" for a, b in tiles]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    variants = [v for v in variants_in_order(rows) if not v.startswith("baseline")]
    for i, (ax, metric) in enumerate(zip(axes, ("max_abs", "mean_abs"))):
        m = mean_by(rows, ["block_r", "block_c"], metric)
        base = [k for k in m if k[2].startswith("baseline")]
        if base:
            ax.axhline(sum(m[k] for k in base) / len(base), color="gray", ls="--", label="baseline")
        lines = [(v, [(label, positive(m.get((a, b, v), float("nan"))), None, None)
                      for label, (a, b) in zip(labels, tiles)]) for v in variants]
        draw_panel(ax, lines, "none", "tile Br x Bc", f"{metric} vs FP64 golden", logy=True,
                   legend=i == 0)
    fig.suptitle(title, y=1.03)
    save(fig, out_dir, name, dpi)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="results folders of `attndev run`")
    ap.add_argument("-o", "--out", default="",
                    help="output folder (default: each results folder itself)")
    ap.add_argument("--dpi", type=int, default=80)
    args = ap.parse_args()
    for folder in args.dirs:
        rows = read_rows(folder)
        name = experiment_name(folder)
        out = args.out or folder
        if "distribution" in name:
            plot_distribution(rows, name, out, args.dpi)
        elif "fig3" in name:
            plot_formats(rows, name, out, args.dpi)
        elif "fig4" in name:
            plot_bars(rows, name, out, args.dpi, "max_abs",
                      "Golden et al. Fig. 4 (reproduced): max |O - golden| (the paper's metric)")
        elif "fig5" in name:
            plot_seqlen(rows, name, out, args.dpi)
        elif "fig6" in name:
            plot_tiles(rows, name, out, args.dpi, f"Golden et al. {name.split('-')[1]} (reproduced)")
        elif "table3" in name:
            plot_bars(rows, name, out, args.dpi, "rmse",
                      "FA-3 Table 3 (reproduced): RMSE vs FP64", published=FA3_PUBLISHED)
        elif "attribution" in name or name.startswith("attribute-"):
            sys.exit(f"plot.py: {folder} is a stage attribution: `attndev attribute` draws it "
                     "(docs/attribution.md)")
        else:
            sys.exit(f"plot.py: no figure layout for experiment '{name}' ({folder})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
