#!/usr/bin/env python3
"""Draw a pivot table written by `attndev plot` (the CSV beside the figure) as PNG, SVG or PDF.

    draw_pivot.py PIVOT.csv --metric M --x X --series S [--row R] [--col C]
                  [--spread minmax|std|ci|none] [--logx auto|on|off] [--logy auto|on|off]
                  [--sharey] [--label NAME=TEXT]... [--xlabel T] [--ylabel T] [--title T]
                  [--size WxH] [--font-size PT] [--dpi N] -o FIGURE.{png,svg,pdf}

`attndev plot` runs it with the Python of its plotting environment (scripts/plot-venv.sh) and
writes to a fresh temporary file that attndev then renames into place; the numbers drawn are
those of the CSV, nothing is recomputed here. One panel per (row, col) facet, one line per
series, error bars from the cell's min..max, +-std or 95% interval over trials, one legend for the
whole figure. Labels are written for people (`seq_len` -> "sequence length N", `ratio_max_abs`
-> "max |O - golden|: variant / reference"); --label renames any column or value. Ratio metrics
get a line at 1 (as accurate as the reference). Series drawn on top of each other stay visible
(each its own marker and line style, later ones hollow), and the legend says which are identical.
The x axis is logarithmic (base 2) when every x is a positive number and they span a factor of 8
or more (sequence lengths, tile sizes); the y axis when the values span two decades or more.

`draw_panel` is the part other scripts reuse (scripts/plot.py draws its line panels with it).
"""
import argparse
import csv
import math
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
# Text stays text in SVG (searchable, editable in a paper), not outlines.
matplotlib.rcParams["svg.fonttype"] = "none"
import matplotlib.pyplot as plt  # noqa: E402

# Okabe-Ito: colours that stay apart for colour-blind readers; markers and line styles keep
# series apart in greyscale too.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINESTYLES = ["-", "--", "-.", ":"]
HATCHES = ["", "//", "..", "xx", "\\\\", "oo", "--", "++"]

DEVIATION = {
    "max_abs": "max |O - golden|",
    "mean_abs": "mean |O - golden|",
    "std_abs": "std of |O - golden|",
    "rmse": "RMSE vs the FP64 golden",
    "rel_l2": "relative L2 error vs the FP64 golden",
    "max_rel": "max relative error vs the FP64 golden",
}
LABELS = {
    **DEVIATION,
    **{f"ratio_{k}": f"{v}: variant / reference" for k, v in DEVIATION.items()},
    "cos_sim": "cosine similarity to the FP64 golden",
    "nan_count": "NaN elements",
    "inf_count": "infinite elements",
    "ref_max_abs": "max |O - O_reference|",
    "ref_mean_abs": "mean |O - O_reference|",
    "identical_fraction": "bit-identical fraction of O",
    "max_ulp": "max distance to the reference (ulps)",
    "mean_ulp": "mean distance to the reference (ulps)",
    "runtime_ms": "run time (ms)",
    "gflops": "GFLOP/s",
    "tflops": "TFLOP/s",
    "seq_len": "sequence length N",
    "seq_len_kv": "key/value length N_kv",
    "head_dim": "head dimension d",
    "block_r": "tile rows Br",
    "block_c": "tile columns Bc",
    "batch": "batch size B",
    "heads": "heads H",
    "distribution": "input distribution",
    "causal": "causal mask",
    "scale_placement": "scale applied to",
    "variant": "variant",
    "policy": "precision policy",
    "algorithm": "algorithm",
    "backend": "backend",
}
# Facet titles and legend entries are short: "Bc = 64", not "tile columns Bc = 64".
SHORT = {"seq_len": "N", "seq_len_kv": "N_kv", "head_dim": "d", "block_r": "Br", "block_c": "Bc",
         "batch": "B", "heads": "H", "distribution": "inputs"}


def as_number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def read_cells(path, args):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = [c for c in (args.row, args.col, args.series, args.x) if c] + ["mean", "min", "max",
                                                                          "std", "n"]
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


def identical_groups(lines):
    """{index: index of the first line drawn with exactly the same points} for coinciding lines."""
    same = {}
    for i, (_, pts) in enumerate(lines):
        for j in range(i):
            if j not in same and [p[:2] for p in pts] == [p[:2] for p in lines[j][1]] and pts:
                same[i] = j
                break
    return same


def touches_earlier(lines, i):
    """Whether some point of line i lies exactly on a point of an earlier line."""
    earlier = {p[:2] for _, pts in lines[:i] for p in pts}
    return any(p[:2] in earlier for p in lines[i][1])


def draw_panel(ax, lines, spread, x_label, y_label, title=None, logx=None, logy=None,
               legend=True, reference_line=None, dodge=False):
    """lines: [(label, [(x, mean, lo, hi)])] with x a number or a category label. lo/hi are the
    error bar's ends (None: no bar). logx/logy: True or False force the scale, None chooses it
    from the values (see the module's text). reference_line: a y value drawn as a thin line
    (1 for ratios). dodge: numeric x shifted a little per line, so that error bars at one x stay
    apart (the caller says so). Returns {index: index} of lines identical to an earlier one."""
    xs_all = [p[0] for _, pts in lines for p in pts]
    numeric = all(isinstance(x, (int, float)) for x in xs_all)
    categories = ordered(xs_all) if not numeric else None
    log_x = numeric and (spans(xs_all, 8) if logx is None else logx)
    span = (max(xs_all) - min(xs_all)) if numeric and xs_all else 0
    same = identical_groups(lines)
    for i, (label, pts) in enumerate(lines):
        shift = (i - (len(lines) - 1) / 2) if dodge and numeric and len(lines) > 1 else 0
        if not numeric:
            xs = [categories.index(p[0]) for p in pts]
        elif log_x:
            xs = [p[0] * 2 ** (0.035 * shift) for p in pts]
        else:
            xs = [p[0] + 0.008 * span * shift for p in pts]
        means = [p[1] for p in pts]
        hollow = i in same or touches_earlier(lines, i)
        style = dict(color=COLORS[i % len(COLORS)], marker=MARKERS[i % len(MARKERS)],
                     linestyle=LINESTYLES[i % len(LINESTYLES)], label=label, linewidth=1.4,
                     markersize=9 if hollow else 5.5, zorder=3 + i,
                     markerfacecolor="none" if hollow else COLORS[i % len(COLORS)],
                     markeredgewidth=1.4 if hollow else 0.8)
        if spread != "none" and any(p[2] is not None for p in pts):
            lower = [max(0.0, p[1] - p[2]) if p[2] is not None else 0 for p in pts]
            upper = [max(0.0, p[3] - p[1]) if p[3] is not None else 0 for p in pts]
            ax.errorbar(xs, means, yerr=[lower, upper], capsize=3, elinewidth=1, **style)
        else:
            ax.plot(xs, means, **style)
    if reference_line is not None:
        ax.axhline(reference_line, color="black", linewidth=0.8, linestyle=(0, (4, 3)), zorder=1)
    if log_x:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(xs_all)))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _: f"{v:g}"))
        ax.minorticks_off()
    if not numeric:
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories, rotation=30, ha="right")
    ys = [v for _, pts in lines for p in pts for v in (p[1], p[2], p[3]) if v is not None]
    if spans(ys, 100) if logy is None else logy:
        ax.set_yscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend()
    return same


def draw_bars(ax, lines, spread, x_label, y_label, title=None, logy=None, reference_line=None):
    """Categorical x: grouped bars, one per series in each category (one bar per category when
    the series is the x column itself), error bars on top, hatches telling series apart."""
    categories = ordered([p[0] for _, pts in lines for p in pts])
    # One bar per category when every series holds one category (the series is the x column):
    # centred and wide, not a thin slot of an empty group.
    alone = all(len(pts) <= 1 for _, pts in lines)
    width = 0.7 if alone else 0.8 / max(1, len(lines))
    for i, (label, pts) in enumerate(lines):
        at = {p[0]: p for p in pts}
        offset = 0 if alone else (i - (len(lines) - 1) / 2) * width
        xs = [k + offset for k, c in enumerate(categories) if c in at]
        ys = [at[c][1] for c in categories if c in at]
        bars = [at[c] for c in categories if c in at]
        yerr = None
        if spread != "none" and any(b[2] is not None for b in bars):
            yerr = [[max(0.0, b[1] - b[2]) if b[2] is not None else 0 for b in bars],
                    [max(0.0, b[3] - b[1]) if b[3] is not None else 0 for b in bars]]
        ax.bar(xs, ys, width, yerr=yerr, capsize=3, label=label, edgecolor="black",
               linewidth=0.5, color=COLORS[i % len(COLORS)], hatch=HATCHES[i % len(HATCHES)],
               error_kw={"elinewidth": 1})
    if reference_line is not None:
        ax.axhline(reference_line, color="black", linewidth=0.8, linestyle=(0, (4, 3)), zorder=1)
    ys = [v for _, pts in lines for p in pts for v in (p[1], p[2], p[3]) if v is not None]
    if spans(ys, 100) if logy is None else logy:
        ax.set_yscale("log")
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories, rotation=30, ha="right")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(title)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    return {}


def bar_ends(cell, spread):
    mean = float(cell["mean"])
    if spread == "minmax":
        return float(cell["min"]), float(cell["max"])
    if spread == "std":
        sd = float(cell["std"])
        return mean - sd, mean + sd
    if spread == "ci":
        lo, hi = as_number(cell.get("ci_low", "")), as_number(cell.get("ci_high", ""))
        return (lo, hi) if lo is not None and hi is not None else (None, None)
    return None, None


def scale_choice(text):
    return {"auto": None, "on": True, "off": False}[text]


def parse_labels(items):
    labels = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            sys.exit(f"draw_pivot.py: --label {item}: expected NAME=TEXT")
        labels[name] = text
    return labels


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--metric", required=True)
    p.add_argument("--x", required=True)
    p.add_argument("--series", required=True)
    p.add_argument("--row", default="")
    p.add_argument("--col", default="")
    p.add_argument("--spread", choices=["minmax", "std", "ci", "none"], default="minmax")
    p.add_argument("--logx", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--logy", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--sharey", action="store_true")
    p.add_argument("--label", action="append", default=[])
    p.add_argument("--xlabel", default="")
    p.add_argument("--ylabel", default="")
    p.add_argument("--title", default="")
    p.add_argument("--size", default="")
    p.add_argument("--font-size", type=float, default=9)
    p.add_argument("--dpi", type=int, default=150)
    p.add_argument("-o", "--out", required=True)
    args = p.parse_args()
    names = {**LABELS, **parse_labels(args.label)}
    short = {**SHORT, **parse_labels(args.label)}
    matplotlib.rcParams.update({"font.size": args.font_size, "axes.titlesize": args.font_size,
                                "legend.fontsize": args.font_size * 0.9})

    cells = read_cells(args.csv, args)
    row_values = ordered([c[args.row] for c in cells]) if args.row else [None]
    col_values = ordered([c[args.col] for c in cells]) if args.col else [None]
    numeric_x = all(as_number(c[args.x]) is not None for c in cells)
    if args.size:
        w, _, h = args.size.partition("x")
        figsize = (float(w), float(h))
    else:
        figsize = (max(5.5, 0.6 + 3.6 * len(col_values)), 1.2 + 2.8 * len(row_values))
    fig, axes = plt.subplots(len(row_values), len(col_values), squeeze=False, figsize=figsize,
                             sharey=args.sharey, sharex=True)
    ratio = args.metric.startswith("ratio_")
    # Error bars of several series at one x would hide each other: shift each series a little.
    dodge = args.spread != "none" and any(c["n"] not in ("0", "1") for c in cells) and len(
        ordered([c[args.series] for c in cells])) > 1
    legend = {}  # label -> handle: one legend for the whole figure
    notes = []
    for i, rv in enumerate(row_values):
        for j, cv in enumerate(col_values):
            mine = [c for c in cells
                    if (rv is None or c[args.row] == rv) and (cv is None or c[args.col] == cv)]
            lines = []
            for s in ordered([c[args.series] for c in cells]):
                pts, special = [], []
                for c in mine:
                    if c[args.series] != s:
                        continue
                    x = as_number(c[args.x]) if numeric_x else c[args.x]
                    if c.get("non_finite"):
                        special.append(f"{c['non_finite']} at {short.get(args.x, args.x)} = "
                                       f"{c[args.x]}")
                    if as_number(c["mean"]) is None:
                        continue
                    lo, hi = bar_ends(c, args.spread)
                    pts.append((x, float(c["mean"]), lo, hi))
                name = names.get(s, s)
                if special:
                    notes.append(f"{name}: " + "; ".join(special))
                lines.append((name, pts))
            title = ", ".join(f"{short.get(k, names.get(k, k))} = {names.get(v, v)}"
                              for k, v in ((args.row, rv), (args.col, cv)) if v is not None)
            ax = axes[i][j]
            x_label = (args.xlabel or names.get(args.x, args.x)) if i == len(row_values) - 1 else ""
            y_label = (args.ylabel or names.get(args.metric, args.metric)) if j == 0 else ""
            if numeric_x:
                same = draw_panel(ax, lines, args.spread, x_label, y_label, title or None,
                                  logx=scale_choice(args.logx), logy=scale_choice(args.logy),
                                  legend=False, reference_line=1.0 if ratio else None,
                                  dodge=dodge)
            else:
                lines = [(n, [(names.get(p[0], p[0]),) + p[1:] for p in pts]) for n, pts in lines]
                same = draw_bars(ax, lines, args.spread, x_label, y_label, title or None,
                                 logy=scale_choice(args.logy),
                                 reference_line=1.0 if ratio else None)
            handles, labels = ax.get_legend_handles_labels()
            for k, (h, lab) in enumerate(zip(handles, labels)):
                index = [n for n, _ in lines].index(lab)
                if index in same:
                    lab = f"{lab} (identical to {lines[same[index]][0]})"
                legend.setdefault(lab, h)
    spread_text = {"minmax": "bars: min..max over trials", "std": "bars: +-1 sd over trials",
                   "ci": "bars: 95% interval of the mean over trials", "none": ""}[args.spread]
    if spread_text and all(c["n"] in ("0", "1") for c in cells):
        spread_text = "one trial per point: no bars"
    if dodge and numeric_x:
        spread_text += "; series offset sideways so that their bars stay apart"
    if ratio:
        spread_text += ("; " if spread_text else "") + "dashed: ratio 1"
    if notes:
        spread_text += ("; " if spread_text else "") + "not drawn (non-finite): " + " | ".join(
            notes)
    # Everything above the panels in inches, converted to a fraction of the figure's height.
    inch = 1 / figsize[1]
    # Characters that fit across the figure at this font size (about 0.6 em per character).
    chars = max(20, int(figsize[0] * 72 / (args.font_size * 0.6)))
    title = textwrap.fill(args.title, int(chars / 1.15)) if args.title else ""
    title_h = (0.1 + 0.22 * (title.count("\n") + 1)) * args.font_size / 9 if title else 0.0
    if title:
        fig.suptitle(title, y=1 - 0.05 * inch, va="top", fontsize=args.font_size * 1.15)
    show_legend = args.series != args.x or numeric_x
    widest = max([len(k) for k in legend] + [1])
    ncol = max(1, min(len(legend), int(chars / 0.9) // (widest + 5)))
    rows_of_legend = math.ceil(len(legend) / ncol) if show_legend else 0
    if show_legend:
        fig.legend(list(legend.values()), list(legend.keys()), loc="upper center",
                   ncol=ncol, frameon=False,
                   title=names.get(args.series, args.series),
                   bbox_to_anchor=(0.5, 1 - title_h * inch))
    legend_h = (0.25 + 0.17 * rows_of_legend) * args.font_size / 9 if show_legend else 0.0
    top = 1 - (title_h + legend_h + 0.02) * inch
    bottom = 0.0
    if spread_text:
        note = textwrap.fill(spread_text, int(chars / 0.8))
        fig.text(0.5, 0.01, note, ha="center", va="bottom", fontsize=args.font_size * 0.8)
        bottom = (0.05 + 0.16 * (note.count("\n") + 1)) * args.font_size / 9 * inch
    fig.tight_layout(rect=(0, bottom, 1, max(0.5, top)))
    fig.savefig(args.out, dpi=args.dpi)


if __name__ == "__main__":
    main()
