"""How far a right-padded sequence is from the same sequence run alone (docs/python.md, "Masks").

    PYTHONPATH=build/release/python build/venv-py/bin/python python/benchmarks/padding_vs_alone.py

For each policy and (length, padded length), runs a batch of one sequence padded with random keys
that a key-padding mask hides, and the sequence alone, and prints over the sequence's rows: how
many output elements differ, the largest difference, and the sequence's own deviation from its
FP64 golden (max_abs) for scale. The kernel, framework and math presets print 0 differences (the
emulator keeps every sum in the unpadded order); PyTorch's CPU flash kernel (torch-cpu-flash-*)
groups a block's keys into vector lanes and gemm pieces by the block's padded width.
"""

import argparse

import numpy as np

import attndev

POLICIES = ("kernel-bf16", "framework-bf16", "torch-math-bf16", "torch-cpu-flash-bf16",
            "torch-cpu-flash-fp16")
CASES = ((45, 77), (70, 77), (100, 128), (200, 256), (1000, 1024), (1500, 2048))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--block", type=int, nargs=2, default=(64, 64))
    args = parser.parse_args()
    print(f"| policy | length -> padded | elements differing | max diff | max diff / deviation "
          f"from golden |")
    print("|---|---|---:|---:|---:|")
    for policy in POLICIES:
        for n, n_pad in CASES:
            q, k, v = attndev.inputs((1, args.heads, n_pad, args.d), seed=n)
            keep = (np.arange(n_pad) < n)[None, None, None, :]
            kw = dict(algo="flash2", policy=policy, block=tuple(args.block))
            padded = attndev.attention(q, k, v, mask=keep, **kw)[:, :, :n]
            alone = attndev.attention(q[:, :, :n], k[:, :, :n], v[:, :, :n], **kw)
            golden = attndev.golden(q[:, :, :n], k[:, :, :n], v[:, :, :n], policy=policy)
            diff = np.abs(padded - alone)
            dev = attndev.deviation(alone, golden, policy=policy)["max_abs"]
            print(f"| {policy} | {n} -> {n_pad} | {np.count_nonzero(diff)} of {diff.size} | "
                  f"{diff.max():.3g} | {diff.max() / dev:.3g} |")


if __name__ == "__main__":
    main()
