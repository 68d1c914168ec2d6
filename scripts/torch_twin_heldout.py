#!/usr/bin/env python3
"""Held-out check of the torch-cpu-flash-* presets: PyTorch's CPU flash kernel on fresh inputs.

    build/venv-torch/bin/python3 scripts/torch_twin_heldout.py [--out DIR] [--attndev BIN]
        [--capability avx2|avx512 ...] [--max-n N] [-j THREADS]

PyTorch ships its CPU kernels built twice, for AVX2 (Vectorized<float> of 8 lanes) and AVX-512
(16 lanes), and runs the AVX-512 build wherever the CPU has AVX-512 unless the environment
variable ATEN_CPU_CAPABILITY names another; the two builds give different bits. Each capability
asked for (default: both) runs in its own process with ATEN_CPU_CAPABILITY set before torch is
imported, and is skipped, with a line saying so, when PyTorch reports another capability (a CPU
without AVX-512). Its outputs are explained by that build's twin, torch-cpu-flash-<fmt> (AVX2) or
torch-cpu-flash-avx512-<fmt>; the other build's twin is run too, to show what the choice of build
changes.

For every case (format x N x d x distribution; N includes odd values, N > 512 so several K/V blocks
of 512, last blocks whose width leaves a scalar tail past the last full vector of 8 or of 16 keys,
and N up to 8192; the cases above N = 2048 use normal(0,1) inputs only, to keep the run short) it
draws Q, K, V with numpy's default_rng(1000 + case index, the index running over SHORT then LONG) (normal(0,1) or uniform[0,1) float32,
rounded to the format by torch), runs F.scaled_dot_product_attention under
sdpa_kernel(SDPBackend.FLASH_ATTENTION) with one thread, scale 1/sqrt(d), without and with the
causal mask, writes the inputs and both outputs as safetensors under DIR/CAPABILITY (default
DIR build/heldout-twin), and asks
`attndev match OUTPUT --inputs IN --algo flash2 --policy TWIN --bc 512` for the share of
bit-identical elements and the largest difference in ulps of the output format. Prints one
markdown table per capability (docs/validation.md quotes them). Needs torch and numpy
(scripts/validate-torch.sh creates build/venv-torch) and a built attndev (default
build/release/apps/attndev/attndev). The whole run (both capabilities) took 72 minutes of wall
time on a shared 2-core machine (10 minutes of CPU); --max-n 2048 leaves the long sequences out.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

# (N, d). The short ones are the earlier table's, with its seeds; the long ones (normal(0,1)
# inputs only) come after them. N = 3000: last K/V block 440 keys (55 vectors of 8; 27 of 16 and
# a tail of 8); 5003: 395 keys (tails of 3 and 11); 8192: sixteen full blocks, no tail.
SHORT = ((100, 64), (333, 64), (512, 128), (777, 64), (1030, 128), (2048, 64))
LONG = ((3000, 64), (5003, 128), (8192, 64))
FORMATS = ("bf16", "fp16")
TWINS = {"avx2": "torch-cpu-flash-{fmt}", "avx512": "torch-cpu-flash-avx512-{fmt}"}


def cases(max_n):
    """(index, format, N, d, distribution); the index (seed 1000 + index) counts every case."""
    out = []
    for shapes, dists in ((SHORT, ("normal", "uniform")), (LONG, ("normal",))):
        for fmt in FORMATS:
            for n, d in shapes:
                for dist in dists:
                    out.append((len(out), fmt, n, d, dist))
    return [c for c in out if c[2] <= max_n]


def write_safetensors(torch, path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().view(torch.int16).numpy().tobytes()
        dtype = {torch.bfloat16: "BF16", torch.float16: "F16"}[t.dtype]
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"torch": torch.__version__,
                              "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                              "threads": str(torch.get_num_threads()),
                              "generator": "scripts/torch_twin_heldout.py"}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.write(b"".join(blobs))


def match(args, out_path, in_path, policy, causal):
    cmd = [args.attndev, "match", out_path, "--inputs", in_path, "--algo", "flash2", "--policy",
           policy, "--bc", "512", "--br", "64", "-j", str(args.threads), "--json"]
    cmd += ["--causal"] if causal else []
    res = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                    text=True).stdout)["candidates"][0]
    return res["identical_fraction"], res["max_ulp"]


def worker(args, capability):
    """One capability: ATEN_CPU_CAPABILITY is already set in this process's environment."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    got = torch.backends.cpu.get_cpu_capability()
    if got.lower() != capability:
        print(f"### {capability.upper()}: skipped (PyTorch {torch.__version__} runs its {got} "
              f"kernels here: the CPU lacks {capability.upper()})\n")
        return 1.0
    torch.set_num_threads(1)
    out_dir = os.path.join(args.out, capability)
    os.makedirs(out_dir, exist_ok=True)
    other = "avx512" if capability == "avx2" else "avx2"
    print(f"### {got} (ATEN_CPU_CAPABILITY={capability}): PyTorch {torch.__version__}, 1 thread\n")
    print(f"| format | N | d | inputs | seed | mask | twin | identical | max ulp | "
          f"{other.upper()} twin identical |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = 1.0
    for index, fmt, n, d, dist in cases(args.max_n):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[fmt]
        seed = 1000 + index
        rng = np.random.default_rng(seed)
        shape = (1, 1, n, d)
        if dist == "normal":
            draws = [rng.standard_normal(shape, dtype=np.float32) for _ in range(3)]
        else:
            draws = [rng.random(shape, dtype=np.float32) for _ in range(3)]
        q, k, v = (torch.from_numpy(x).to(dtype) for x in draws)
        stem = os.path.join(out_dir, f"{fmt}_n{n}_d{d}_{dist}_seed{seed}")
        write_safetensors(torch, stem + ".in.safetensors", {"q": q, "k": k, "v": v})
        for causal in (False, True):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                   scale=1 / math.sqrt(d))
            out_path = stem + (".o_causal" if causal else ".o") + ".safetensors"
            write_safetensors(torch, out_path, {"o": o})
            twin = TWINS[capability].format(fmt=fmt)
            share, ulp = match(args, out_path, stem + ".in.safetensors", twin, causal)
            other_share, _ = match(args, out_path, stem + ".in.safetensors",
                                   TWINS[other].format(fmt=fmt), causal)
            worst = min(worst, share)
            print(f"| {fmt} | {n} | {d} | {dist}(0,1) | {seed} | "
                  f"{'causal' if causal else 'none'} | {twin} | {100 * share:.3f}% | {ulp} | "
                  f"{100 * other_share:.3f}% |", flush=True)
    print(f"\nleast identical share ({got}, its own twin): {100 * worst:.3f}%\n", flush=True)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/heldout-twin")
    ap.add_argument("--attndev", default="build/release/apps/attndev/attndev")
    ap.add_argument("--capability", action="append", choices=sorted(TWINS),
                    help="PyTorch kernel build to check (repeatable; default both)")
    ap.add_argument("--max-n", type=int, default=8192,
                    help="leave out the cases with a longer sequence (default 8192: all)")
    ap.add_argument("-j", "--threads", type=int, default=0,
                    help="threads of each `attndev match` (0: all; its result does not depend on it)")
    ap.add_argument("--worker", choices=sorted(TWINS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not os.path.isfile(args.attndev):
        print(f"torch_twin_heldout.py: {args.attndev} does not exist: build it with "
              "`cmake --build build/release --target attndev` or pass --attndev", file=sys.stderr)
        return 2
    if args.worker:
        worker(args, args.worker)
        return 0
    for capability in args.capability or ["avx2", "avx512"]:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
        cmd = [sys.executable, os.path.abspath(__file__), "--out", args.out, "--attndev",
               args.attndev, "--max-n", str(args.max_n), "-j", str(args.threads),
               "--worker", capability]
        rc = subprocess.run(cmd, env=env).returncode
        if rc != 0:
            print(f"torch_twin_heldout.py: the {capability} run failed (exit {rc})", file=sys.stderr)
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
