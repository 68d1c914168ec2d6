"""attndev.attention against `attndev bench` at the same point (docs/python.md, "Speed").

    build/venv-py/bin/python python/benchmarks/attention_vs_cli.py \
        [--attndev build/release/apps/attndev/attndev] [--n 4096] [--d 128] [--threads 1] [--repeats 5] [--rounds 3]

Times the package's call (median of --repeats, the conversions in and out included) and the CLI's
own timing of the same kernel (`attndev bench --json`: median of its repeats, the kernel alone),
alternating the two --rounds times so that a change in the machine's load hits both, and prints
each round's ratio (package / CLI), their median, and the ratio of the fastest calls of each (the
least disturbed by other processes on a shared machine). Each package call also reports its
kernel's own time (timing=True): whole call / kernel alone, measured within one call, is the
package's overhead free of the load's drift between calls.
"""

import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import attndev


def package_seconds(q, k, v, args, overheads):
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        _, t = attndev.attention(q, k, v, algo=args.algo, policy=args.policy, block=(64, 64),
                                 threads=args.threads, timing=True)
        times.append(time.perf_counter() - start)
        overheads.append(t["total_s"] / t["kernel_s"])
    return statistics.median(times), min(times)


def cli_seconds(args):
    out = subprocess.run([args.attndev, "bench", "--n", str(args.n), "--d", str(args.d), "--algo",
                          args.algo, "--policy", args.policy, "--threads", str(args.threads),
                          "--repeats", str(args.repeats), "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--attndev", default="build/release/apps/attndev/attndev")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--algo", default="flash2")
    p.add_argument("--policy", default="kernel-bf16")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((args.n, args.d)) for _ in range(3))
    ratios, best_py, best_cli, overheads = [], [], [], []
    for r in range(args.rounds):
        py, py_min = package_seconds(q, k, v, args, overheads)
        cli, cli_min = doc_seconds(cli_seconds(args))
        ratios.append(py / cli)
        best_py.append(py_min)
        best_cli.append(cli_min)
        print(f"round {r}: attndev.attention {py:.3f} s, attndev bench {cli:.3f} s (medians), "
              f"ratio {py / cli:.3f}")
    print(f"median of the rounds' ratios {statistics.median(ratios):.3f}; fastest call "
          f"{min(best_py):.3f} s vs {min(best_cli):.3f} s, ratio {min(best_py) / min(best_cli):.3f} "
          f"(N={args.n} d={args.d} {args.algo} {args.policy} threads={args.threads})")
    print(f"within each package call, whole call / kernel alone: median "
          f"{statistics.median(overheads):.4f}, max {max(overheads):.4f} over {len(overheads)} calls")


def doc_seconds(doc):
    (row,) = doc["results"]
    if row["check"] != "ok":
        raise SystemExit(f"attndev bench: the kernel failed its check: {row['check']}")
    return row["median_s"], min(row["seconds"])


if __name__ == "__main__":
    main()
