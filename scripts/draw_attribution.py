#!/usr/bin/env python3
"""Draw the attribution table written by `attndev attribute` (attribution.csv) as a figure.

    draw_attribution.py ATTRIBUTION.csv --metric M -o FIGURE.{png,svg,pdf}

One row of panels per algorithm and policy: on the left each stage alone in the policy's format
(the rest fp64), on the right each stage raised to fp32 (leave-one-out); bars grouped by stage,
one bar per N (or per column of the table), the height the algorithm's deviation over the
reference's (log scale), a line at 1 (as accurate as the reference) and, dashed, the policy as it
is. A row that could not change a bit, or was not run, is marked on its label. The numbers are
those of the CSV; nothing is recomputed. `attndev attribute` runs this with the Python of the
plotting environment (scripts/plot-venv.sh).
"""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"
import matplotlib.pyplot as plt  # noqa: E402

# Okabe-Ito: colours that stay apart for colour-blind readers and in greyscale print.
COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
HATCHES = ["", "//", "..", "xx", "\\\\", "oo", "--", "++"]


def number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) and v > 0 else None


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def short_label(row):
    """The stage part of a row's label, with a mark for rows that cannot change a bit."""
    stage = row["stage"]
    mode, _, stages = stage.partition(":")
    text = stages if stages else "as is"
    note = row["note"]
    # A coupled row's note says why its stages move together ("raising score alone cannot
    # change a bit"): only a note that starts with the claim is about the row itself.
    if note.startswith("not run"):
        text += " (not run)"
    elif note.startswith("cannot change a bit"):
        text += " (no-op)"
    elif "measured: every metric equal" in note:
        text += " (no change)"
    return mode, text


def draw_mode(ax, rows, mode, columns, as_is, title):
    labels = []
    for r in rows:
        m, text = short_label(r)
        if m == mode and text not in labels:
            labels.append(text)
    width = 0.8 / max(1, len(columns))
    for j, column in enumerate(columns):
        heights = []
        for label in labels:
            cell = [r for r in rows if short_label(r) == (mode, label) and r["column"] == column]
            heights.append(number(cell[0]["ratio"]) if cell else None)
        xs = [i + (j - (len(columns) - 1) / 2) * width for i in range(len(labels))]
        ax.bar([x for x, h in zip(xs, heights) if h], [h for h in heights if h], width,
               color=COLORS[j % len(COLORS)], hatch=HATCHES[j % len(HATCHES)],
               edgecolor="black", linewidth=0.4, label=column)
        if column in as_is:
            ax.axhline(as_is[column], color=COLORS[j % len(COLORS)], ls="--", lw=1)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", which="major", alpha=0.3)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--metric", default="max_abs")
    p.add_argument("-o", "--out", required=True)
    args = p.parse_args()
    with open(args.csv, newline="") as f:
        cells = list(csv.DictReader(f))
    if not cells:
        sys.exit(f"draw_attribution.py: {args.csv} holds no rows: nothing to draw")
    groups = ordered([(c["algorithm"], c["policy"], c["reference"]) for c in cells])
    columns = ordered([c["column"] for c in cells])
    # The two panels of a row answer different questions (one stage alone can be 10^4 times the
    # reference while raising one moves the ratio by 2x): each gets its own y scale.
    fig, axes = plt.subplots(len(groups), 2, squeeze=False, figsize=(10, 3.6 * len(groups)))
    for i, (alg, policy, reference) in enumerate(groups):
        rows = [c for c in cells if (c["algorithm"], c["policy"], c["reference"]) ==
                (alg, policy, reference)]
        as_is = {c["column"]: number(c["ratio"]) for c in rows if c["stage"] == "none"
                 and number(c["ratio"])}
        draw_mode(axes[i][0], rows, "only", columns, as_is,
                  f"{alg} under {policy}: one stage in its format, the rest fp64")
        draw_mode(axes[i][1], rows, "raise", columns, as_is,
                  f"{alg} under {policy}: one stage raised to fp32")
        axes[i][0].set_ylabel(f"{args.metric}: {alg} / reference")
        axes[i][1].set_ylabel(f"{args.metric}: {alg} / reference")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if not handles:
        handles, labels = axes[0][1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(columns), frameon=False,
               title="dashed: the policy as it is; solid line: as accurate as the reference",
               title_fontsize=8, fontsize=8, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.93 if len(groups) == 1 else 0.96))
    fig.savefig(args.out, dpi=100)


if __name__ == "__main__":
    main()
