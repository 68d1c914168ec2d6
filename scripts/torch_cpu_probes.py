#!/usr/bin/env python3
"""Crafted-input probes of PyTorch's CPU flash kernel: the steps torch-cpu-flash-* models per build.

    build/venv-torch/bin/python3 scripts/torch_cpu_probes.py [--capability avx2|avx512 ...]

Each probe isolates one step of the kernel (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp)
on one query row and one K/V block, with scale 1, q = e_0 and k_j = x_j e_0, so the scores are the
chosen x_j exactly and the row max is 0 (key 0 has x = 0). Each capability asked for (default both)
runs in its own process with ATEN_CPU_CAPABILITY set before torch is imported; one PyTorch does not
run (the CPU lacks it) is reported as skipped. One thread. docs/numerics.md quotes the output.

tail   Which keys get the scalar exp. fp32, 24 keys, x = (0, -1000 x 19, -1, -1000 x 3),
       V = e_0 for key 0 and e_1 for key 20: O = (1, p_20) / (1 + p_20) in float, so O_0 shows
       p_20: exp_u20(-1) if key 20 is a vector lane (AVX2: three vectors of 8), libm's expf(-1)
       if it is in the scalar tail (AVX-512: one vector of 16, a tail of 8).
sum    The order of the row sum where P is stored in fp16. Rows of n keys (n a multiple of the
       build's lanes, so every key is a vector lane and p_j = fexp_u20(x_j)), x_0 = 0 and the other
       x_j drawn from {-2, -5, -10}, whose fexp_u20 values are known (test/numerics/test_math.cpp);
       the kernel's fp32 logsumexp, m + logf(l) = logf(l), shows l to about its last bit.
       Each candidate order of the fp32 additions gives an l; the table counts the rows whose lse
       is the correctly rounded log of that l (glibc's logf can differ from it when log(l) lies
       within a hair of a midpoint between floats: such a row matches no candidate). Candidates,
       L the build's lanes: "1 reg" L running lanes, key j into lane j % L, then halves; "2 reg"
       keys in groups of 2L into two registers of L lanes, the last vector of L past the last
       group into a tail register, then (reg0 + tail) + reg1 lane by lane, then halves; "2 reg,
       tail last" (reg0 + reg1) + tail; "2 reg, tail apart" halves(reg0 + reg1) + halves(tail).
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np

F32 = np.float32
# fexp_u20 at the probe's scores (test/numerics/test_math.cpp, checked against PyTorch's outputs).
FEXP = {0.0: float.fromhex("0x1.fff9p-1"), -2.0: float.fromhex("0x1.1531p-3"),
        -5.0: float.fromhex("0x1.b999p-8"), -10.0: float.fromhex("0x1.7cd18p-15")}
EXP_U20_MINUS_1 = float.fromhex("0x1.78b566p-2")  # test_math.cpp's exp_u20 table, from PyTorch


def add(a, b):
    return F32(F32(a) + F32(b))


def halves(r):
    r = list(r)
    h = len(r) // 2
    while h >= 1:
        for i in range(h):
            r[i] = add(r[i], r[i + h])
        h //= 2
    return r[0]


def candidate_sums(p, lanes):
    """l under each candidate order of the row sum (see the docstring)."""
    one = [F32(0)] * lanes
    for j, v in enumerate(p):
        one[j % lanes] = add(one[j % lanes], v)
    group = 2 * lanes
    grouped = len(p) // group * group
    reg = [[F32(0)] * lanes, [F32(0)] * lanes]
    tail = [F32(0)] * lanes
    for j in range(grouped):
        r = reg[(j % group) // lanes]
        r[j % lanes] = add(r[j % lanes], p[j])
    for j in range(grouped, len(p)):
        tail[j % lanes] = add(tail[j % lanes], p[j])
    both = [add(reg[0][i], reg[1][i]) for i in range(lanes)]
    return {
        "1 reg": halves(one),
        "2 reg": halves([add(add(reg[0][i], tail[i]), reg[1][i]) for i in range(lanes)]),
        "2 reg, tail last": halves([add(both[i], tail[i]) for i in range(lanes)]),
        "2 reg, tail apart": add(halves(both), halves(tail)),
    }


def probe_tail(torch, flash):
    k = torch.zeros(1, 1, 24, 2)
    k[0, 0, 1:, 0] = -1000.0
    k[0, 0, 20, 0] = -1.0
    v = torch.zeros(1, 1, 24, 2)
    v[0, 0, 0, 0] = 1.0
    v[0, 0, 20, 1] = 1.0
    q = torch.tensor([[[[1.0, 0.0]]]])
    o, _ = flash(q, k, v, scale=1.0)
    o0 = o[0, 0, 0, 0].item()
    expf = float(F32(math.exp(-1.0)))
    which = [name for name, p in (("exp_u20(-1): a vector lane", EXP_U20_MINUS_1),
                                  ("expf(-1): the scalar tail", expf))
             if float(F32(1.0) / add(1.0, p)) == o0]
    print(f"tail: O_0 = {o0.hex()}, so p_20 = {' or '.join(which) or 'neither candidate'}")


def probe_sum(torch, flash, lanes):
    rng = np.random.default_rng(1)
    print(f"sum (fp16 P, L = {lanes}): rows whose lse matches each order")
    names = list(candidate_sums([F32(1)] * lanes, lanes))
    print("| keys | rows | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for n in (3 * lanes, 5 * lanes, 6 * lanes, 7 * lanes):
        counts = dict.fromkeys(names, 0)
        rows = 0
        while rows < 60:
            x = [0.0] + list(rng.choice([-2.0, -5.0, -10.0], size=n - 1, p=[0.1, 0.45, 0.45]))
            sums = candidate_sums([F32(FEXP[v]) for v in x], lanes)
            if len({float(v) for v in sums.values()}) < 2:
                continue  # every order gives the same l: this row tells nothing
            q = torch.zeros(1, 1, 1, 8, dtype=torch.float16)
            q[0, 0, 0, 0] = 1.0
            k = torch.zeros(1, 1, n, 8, dtype=torch.float16)
            k[0, 0, :, 0] = torch.tensor(x)
            _, lse = flash(q, k, torch.zeros(1, 1, n, 8, dtype=torch.float16), scale=1.0)
            got = F32(lse[0, 0, 0].item())
            rows += 1
            for name, l in sums.items():
                counts[name] += F32(math.log(float(l))) == got
        print(f"| {n} | {rows} | " + " | ".join(str(counts[c]) for c in names) + " |")


def worker(capability):
    import torch
    got = torch.backends.cpu.get_cpu_capability()
    if got.lower() != capability:
        print(f"### {capability.upper()}: skipped (PyTorch runs its {got} kernels here)\n")
        return
    torch.set_num_threads(1)
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    print(f"### {got} (ATEN_CPU_CAPABILITY={capability}), PyTorch {torch.__version__}\n")
    probe_tail(torch, flash)
    probe_sum(torch, flash, 16 if capability == "avx512" else 8)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capability", action="append", choices=["avx2", "avx512"],
                    help="PyTorch kernel build to probe (repeatable; default both)")
    ap.add_argument("--worker", choices=["avx2", "avx512"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return 0
    for capability in args.capability or ["avx2", "avx512"]:
        rc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", capability],
                            env=dict(os.environ, ATEN_CPU_CAPABILITY=capability)).returncode
        if rc != 0:
            print(f"torch_cpu_probes.py: the {capability} run failed (exit {rc})", file=sys.stderr)
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
