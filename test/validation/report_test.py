#!/usr/bin/env python3
"""scripts/validation_report.py on a real `attndev run`, without PyTorch.

    report_test.py --attndev BINARY --source REPO

The run's external variant is scripts/external/numpy_attention.py (numpy's fp32 attention) and
its twins are emulated variants with `ratio_to` and `reference` naming it, as in
configs/validation/torch-cpu.json. Checked: every ratio the report prints is the one computed here
from results.csv; the 5% verdict follows the figures (copies of the results whose twin deviations
are set to 1.04x and 1.06x the real one's); a failed row leaves its cells out and the verdict "no";
--update replaces only the text between the markers and refuses a file without them. Exit 0 pass,
1 fail, 77 skipped (no numpy for the external variant).
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def read_csv(folder):
    with open(os.path.join(folder, "results.csv"), newline="") as f:
        return list(csv.DictReader(f))


def write_csv(folder, rows):
    with open(os.path.join(folder, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def summary_rows(text):
    """{twin cell text: row cells} of the agreement table (rows starting with '| ' and 7 cells)."""
    out = []
    section = text.split("### Agreement", 1)[1].split("### Per sequence length", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] not in ("real implementation", "---"):
            out.append(cells)
    return out


def expected_ratios(rows, twin, real):
    """(min, max) over (distribution, seq_len) of mean-over-trials twin / real mean_abs."""
    by = {}
    for r in rows:
        by.setdefault((r["variant"], r["distribution"], r["seq_len"]), []).append(float(r["mean_abs"]))
    ratios = []
    for (v, d, n), xs in by.items():
        if v != twin:
            continue
        ys = by[(real, d, n)]
        ratios.append((sum(xs) / len(xs)) / (sum(ys) / len(ys)))
    return min(ratios), max(ratios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attndev", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    # The python running this test may lack numpy (a pyenv, a virtual environment); Debian's has
    # it. The report script itself needs the standard library only.
    python = next((p for p in (sys.executable, "/usr/bin/python3")
                   if os.path.exists(p) and run([p, "-c", "import numpy"]).returncode == 0), None)
    if python is None:
        print("SKIPPED: no python3 with numpy for the external numpy implementation "
              "(scripts/setup.sh installs python3-numpy)", file=sys.stderr)
        return SKIP
    report = os.path.join(a.source, "scripts", "validation_report.py")
    numpy_impl = os.path.join(a.source, "scripts", "external", "numpy_attention.py")
    tmp = tempfile.mkdtemp(prefix="attndev_validation_report_")
    try:
        config = {
            "name": "report-test",
            "axes": {"seq_len": [24, 40], "head_dim": 8, "block_r": 8, "block_c": 16,
                     "distribution": ["normal(0,1)", "uniform(0,1)"]},
            "trials": 2,
            "variants": [
                {"name": "np-fp32", "format": "fp32",
                 "external": f"{python} {numpy_impl} {{inputs}} {{output}} --dtype float32"},
                {"name": "base-fp32", "algorithm": "baseline", "policy": "fp32",
                 "reference": "np-fp32", "ratio_to": "np-fp32"},
                {"name": "flash2-bf16", "algorithm": "flash2", "policy": "kernel-bf16",
                 "reference": "np-fp32", "ratio_to": "np-fp32"},
            ],
        }
        cfg = os.path.join(tmp, "config.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        out = os.path.join(tmp, "run")
        r = run([a.attndev, "run", cfg, "-o", out, "-j", "1", "--no-summary"])
        if r.returncode != 0:
            check(False, f"attndev run exited {r.returncode}: {r.stderr[-2000:]}")
            return 1
        rows = read_csv(out)
        check(len(rows) == 3 * 2 * 2 * 2, f"24 rows expected, got {len(rows)}")
        check(all(x["status"] == "ok" for x in rows), "every row ok")

        # 1. The figures printed are the ones in results.csv.
        r = run([python, report, out, "--torch", "none", "--command", "report_test.py"])
        check(r.returncode == 0, f"report exits 0 (got {r.returncode}: {r.stderr[-500:]})")
        text = r.stdout
        table = summary_rows(text)
        check(len(table) == 2, f"two twins in the agreement table, got {table}")
        for cells in table:
            twin = "base-fp32" if cells[1].startswith("baseline") else "flash2-bf16"
            lo, hi = expected_ratios(rows, twin, "np-fp32")
            m = re.fullmatch(r"([0-9.e+-]+)\.\.([0-9.e+-]+)", cells[3])
            check(m is not None, f"ratio range cell '{cells[3]}'")
            if m:
                got_lo, got_hi = float(m.group(1)), float(m.group(2))
                check(abs(got_lo - lo) <= 5e-4 * lo and abs(got_hi - hi) <= 5e-4 * hi,
                      f"{twin}: printed {cells[3]}, computed {lo:.6g}..{hi:.6g}")
            within = max(abs(lo - 1), abs(hi - 1)) <= 0.05
            check(cells[6] == ("yes" if within else "**no**"),
                  f"{twin}: verdict '{cells[6]}' for ratios {lo:.4g}..{hi:.4g}")
        check("N=24" in text and "N=40" in text, "per-N tables list both lengths")
        check("report_test.py" in text, "the command is quoted")

        # 2. The verdict follows the figures: twin deviations set to 1.04x / 1.06x the real one's.
        real = {(x["distribution"], x["seq_len"], x["seed"]): float(x["mean_abs"])
                for x in rows if x["variant"] == "np-fp32"}
        for factor, verdict in ((1.04, "yes"), (0.96, "yes"), (1.06, "**no**"), (0.94, "**no**")):
            copy = os.path.join(tmp, f"x{factor}")
            shutil.copytree(out, copy)
            mutated = []
            for x in rows:
                x = dict(x)
                if x["variant"] == "base-fp32":
                    x["mean_abs"] = repr(factor * real[(x["distribution"], x["seq_len"], x["seed"])])
                mutated.append(x)
            write_csv(copy, mutated)
            r = run([python, report, copy])
            cells = [c for c in summary_rows(r.stdout) if c[1].startswith("baseline")]
            check(len(cells) == 1 and cells[0][6] == verdict,
                  f"x{factor}: verdict {verdict} expected, got {cells}")
            ratio = f"{factor:.4g}..{factor:.4g}"
            check(len(cells) == 1 and cells[0][3] == ratio,
                  f"x{factor}: ratio {ratio} expected, got {cells}")

        # 3. A failed row: its cell is left out ('-'), listed under "Not compared", verdict no.
        copy = os.path.join(tmp, "failed")
        shutil.copytree(out, copy)
        mutated = [dict(x) for x in rows]
        for x in mutated:
            if x["variant"] == "np-fp32" and x["seq_len"] == "40":
                x["status"] = "failed: external command exited with status 1: boom"
                break
        write_csv(copy, mutated)
        r = run([python, report, copy])
        check("### Not compared" in r.stdout and "boom" in r.stdout, "failed row listed")
        cells = [c for c in summary_rows(r.stdout) if c[1].startswith("baseline")]
        check(len(cells) == 1 and cells[0][6] == "**no**",
              f"a missing cell is not within 5%: {cells}")

        # 4. --update: only the generated section changes; no markers, nothing written.
        doc = os.path.join(tmp, "doc.md")
        with open(report) as f:
            src = f.read()
        begin = re.search(r'BEGIN = "(.*)"', src).group(1)
        end = re.search(r'END = "(.*)"', src).group(1)
        with open(doc, "w") as f:
            f.write(f"# head\n\n{begin}\nold table\n{end}\n\n## tail\n")
        r = run([python, report, out, "--update", doc])
        check(r.returncode == 0, f"--update exits 0: {r.stderr}")
        with open(doc) as f:
            new = f.read()
        check(new.startswith("# head\n\n" + begin) and new.endswith(end + "\n\n## tail\n")
              and "old table" not in new and "### Agreement" in new, "--update replaced the section")
        plain = os.path.join(tmp, "plain.md")
        with open(plain, "w") as f:
            f.write("no markers\n")
        r = run([python, report, out, "--update", plain])
        check(r.returncode != 0 and "no GENERATED markers" in r.stderr,
              f"--update without markers refused: {r.returncode} {r.stderr}")
        with open(plain) as f:
            check(f.read() == "no markers\n", "a file without markers is left alone")

        # 5. A folder that is not a results folder: a clear error, not a traceback.
        r = run([python, report, os.path.join(tmp, "nothing")])
        check(r.returncode != 0 and "Traceback" not in r.stderr and "results" in r.stderr,
              f"missing folder: {r.returncode} {r.stderr[-300:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("validation_report: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
