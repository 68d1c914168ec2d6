#!/usr/bin/env python3
"""Draw a pivot table written by `attndev plot` (the CSV beside the figure) as PNG, SVG or PDF.

    draw_pivot.py PIVOT.csv --metric M --x X --series S [--row R] [--col C]
                  [--spread minmax|std|none] -o FIGURE.{png,svg,pdf}

`attndev plot` runs it with the Python of build/venv-plot (scripts/plot-venv.sh); the numbers
drawn are those of the CSV, nothing is recomputed here. One panel per (row, col) facet, one line
per series, error bars from the cell's min..max or +-std over trials. The x axis is logarithmic
(base 2) when every x is a positive number and they span a factor of 8 or more (sequence lengths,
tile sizes); the y axis when the values span two decades or more.

`draw_panel` is the part other scripts reuse (scripts/plot.py draws its figures with it).
"""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
# Text stays text in SVG (searchable, editable in a paper), not outlines.
matplotlib.rcParams["svg.fonttype"] = "none"
import matplotlib.pyplot as plt  # noqa: E402


def as_number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def read_cells(path, args):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = [c for c in (args.row, args.col, args.series, args.x) if c] + ["mean", "min", "max", "std", "n"]
    if rows:
        missing = [c for c in need if c not in rows[0]]
        if missing:
            sys.exit(f"draw_pivot.py: {path} has no column(s) {', '.join(missing)}: "
                     "is it a pivot written by `attndev plot` with the same axes?")
    if not rows:
        sys.exit(f"draw_pivot.py: {path} holds no cells: nothing to draw")
    return rows


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def spans(values, factor):
    positive = [v for v in values if v is not None and v > 0]
    return len(positive) == len(values) and positive and max(positive) / min(positive) >= factor


def draw_panel(ax, lines, spread, x_label, y_label, title=None, logx=None, logy=None,
               legend=True):
    """lines: [(label, [(x, mean, lo, hi)])] with x a number or a category label. lo/hi are the
    error bar's ends (None: no bar). logx/logy: True or False force the scale, None chooses it
    from the values (see the module's text)."""
    xs_all = [p[0] for _, pts in lines for p in pts]
    numeric = all(isinstance(x, (int, float)) for x in xs_all)
    categories = ordered(xs_all) if not numeric else None
    for label, pts in lines:
        xs = [p[0] if numeric else categories.index(p[0]) for p in pts]
        means = [p[1] for p in pts]
        if spread != "none" and any(p[2] is not None for p in pts):
            lower = [p[1] - p[2] if p[2] is not None else 0 for p in pts]
            upper = [p[3] - p[1] if p[3] is not None else 0 for p in pts]
            ax.errorbar(xs, means, yerr=[lower, upper], marker="o", capsize=3, label=label)
        else:
            ax.plot(xs, means, marker="o", label=label)
    if numeric and (spans(xs_all, 8) if logx is None else logx):
        ax.set_xscale("log", base=2)
    if not numeric:
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories, rotation=30, ha="right")
    ys = [v for _, pts in lines for p in pts for v in (p[1], p[2], p[3]) if v is not None]
    if spans(ys, 100) if logy is None else logy:
        ax.set_yscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if legend:
        ax.legend(fontsize=7)


def bar_ends(cell, spread):
    mean = float(cell["mean"])
    if spread == "minmax":
        return float(cell["min"]), float(cell["max"])
    if spread == "std":
        sd = float(cell["std"])
        return mean - sd, mean + sd
    return None, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--metric", required=True)
    p.add_argument("--x", required=True)
    p.add_argument("--series", required=True)
    p.add_argument("--row", default="")
    p.add_argument("--col", default="")
    p.add_argument("--spread", choices=["minmax", "std", "none"], default="minmax")
    p.add_argument("--title", default="")
    p.add_argument("-o", "--out", required=True)
    args = p.parse_args()

    cells = read_cells(args.csv, args)
    row_values = ordered([c[args.row] for c in cells]) if args.row else [None]
    col_values = ordered([c[args.col] for c in cells]) if args.col else [None]
    numeric_x = all(as_number(c[args.x]) is not None for c in cells)
    fig, axes = plt.subplots(len(row_values), len(col_values), squeeze=False,
                             figsize=(4.8 * len(col_values), 3.6 * len(row_values)))
    spread_text = {"minmax": "bars: min..max over trials", "std": "bars: +-1 std over trials",
                   "none": "no bars"}[args.spread]
    for i, rv in enumerate(row_values):
        for j, cv in enumerate(col_values):
            mine = [c for c in cells
                    if (rv is None or c[args.row] == rv) and (cv is None or c[args.col] == cv)]
            lines = []
            for s in ordered([c[args.series] for c in mine]):
                pts = []
                for c in mine:
                    if c[args.series] != s:
                        continue
                    x = as_number(c[args.x]) if numeric_x else c[args.x]
                    lo, hi = bar_ends(c, args.spread)
                    pts.append((x, float(c["mean"]), lo, hi))
                lines.append((f"{args.series}={s}", pts))
            title = ", ".join(f"{k}={v}" for k, v in ((args.row, rv), (args.col, cv)) if v is not None)
            draw_panel(axes[i][j], lines, args.spread, args.x, f"{args.metric} (mean)", title or None)
    fig.suptitle(args.title or f"{args.metric} by {args.x} ({spread_text})", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
