#!/usr/bin/env python3
"""Checks the direction of paper claims on a smoke run's results.csv (standard library only).

Usage: check_claims.py RESULTS_CSV CLAIM...

A claim is `METRIC:A>B`; A and B are each `VARIANT` or `VARIANT@COL=VALUE&COL=VALUE...`. The mean
of column METRIC over the rows A selects (every trial) must be greater than the mean over the rows
B selects. A side that selects no row, or a value that is not a finite number, fails the check.
Exit 0 when every claim holds, 1 otherwise (each claim is printed with both means).
"""
import csv
import math
import re
import sys


def mean_of(rows, metric, side):
    variant, _, cond = side.partition("@")
    conditions = [c.split("=", 1) for c in cond.split("&")] if cond else []
    values = []
    for row in rows:
        if row["variant"] != variant:
            continue
        if any(row.get(key) != value for key, value in conditions):
            continue
        value = float(row[metric])
        if not math.isfinite(value):
            raise ValueError(f"{side}: {metric} = {row[metric]}")
        values.append(value)
    if not values:
        raise ValueError(f"{side} selects no row")
    return sum(values) / len(values), len(values)


def main():
    path, claims = sys.argv[1], sys.argv[2:]
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    failed = 0
    for claim in claims:
        m = re.fullmatch(r"([a-z_]+):([^>]+)>(.+)", claim)
        if not m:
            print(f"malformed claim: {claim}")
            failed += 1
            continue
        metric, lhs, rhs = m.groups()
        if metric not in rows[0]:
            print(f"results.csv has no column {metric}")
            failed += 1
            continue
        try:
            a, na = mean_of(rows, metric, lhs)
            b, nb = mean_of(rows, metric, rhs)
        except ValueError as e:
            print(f"FAIL {claim}: {e}")
            failed += 1
            continue
        holds = a > b
        failed += not holds
        print(f"{'ok  ' if holds else 'FAIL'} {claim}: {a:.4g} (mean of {na}) vs {b:.4g} (mean of {nb})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
