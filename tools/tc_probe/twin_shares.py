#!/usr/bin/env python3
"""The identical share of each twin against its kernel's output, from `attndev match --json`.

    twin_shares.py CASE KERNEL MATCH_JSON [--require TWIN...] [--threshold 0.99] [--table FILE]

MATCH_JSON is what `attndev match KERNEL_OUTPUT --inputs ... --json` printed for one fixture
case. For each twin candidate (fa2-cuda, fa2-cuda-unfused, mem-efficient, flash2-tc-twin, each
under its profile) the share of bit-identical elements is read from the candidate's
identical_fraction; the kernel's best twin is the one with the largest share. Prints one line:
    twins: CASE KERNEL: best TWIN PROFILE 99.87% identical [PASS|FAIL|report]
PASS/FAIL only when --require names the twins whose best must reach --threshold (the others are
reported). Appends a tab-separated row to --table. Exit 0 pass or report, 1 fail, 2 bad input.
"""
import argparse
import json
import sys

TWINS = ("fa2-cuda", "fa2-cuda-unfused", "mem-efficient", "flash2-tc-twin")


def shares(doc):
    """[(twin, policy_label, share)] for every twin candidate that ran."""
    out = []
    for c in doc.get("candidates", []):
        if c.get("algorithm") in TWINS and str(c.get("status", "")).startswith("ok"):
            out.append((c["algorithm"], c.get("policy_label", ""), float(c["identical_fraction"])))
    return out


def verdict(rows, require, threshold):
    """(best row or None, 'PASS' | 'FAIL' | 'report')."""
    pool = [r for r in rows if not require or r[0] in require]
    best = max(pool, key=lambda r: r[2]) if pool else None
    if not require:
        return best, "report"
    return best, ("PASS" if best is not None and best[2] >= threshold else "FAIL")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("kernel")
    ap.add_argument("match_json")
    ap.add_argument("--require", nargs="*", default=[])
    ap.add_argument("--threshold", type=float, default=0.99)
    ap.add_argument("--table", default="")
    a = ap.parse_args()
    try:
        with open(a.match_json) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"twins: {a.case} {a.kernel}: FAIL: no match output ({e})")
        return 2
    best, result = verdict(shares(doc), a.require, a.threshold)
    if best is None:
        print(f"twins: {a.case} {a.kernel}: no twin ran {'FAIL' if a.require else 'report'}")
        return 1 if a.require else 0
    line = f"twins: {a.case} {a.kernel}: best {best[0]} {best[1]} {100 * best[2]:.2f}% identical {result}"
    print(line)
    if a.table:
        with open(a.table, "a") as f:
            f.write(f"{a.case}\t{a.kernel}\t{best[0]}\t{best[1]}\t{best[2]:.6f}\t{result}\n")
    return 1 if result == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
