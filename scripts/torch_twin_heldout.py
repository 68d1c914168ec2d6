#!/usr/bin/env python3
"""Held-out check of the torch-cpu-flash-* presets: PyTorch's CPU flash kernel on fresh inputs.

    build/venv-torch/bin/python3 scripts/torch_twin_heldout.py [--out DIR] [--attndev BIN]

For every case (format x N x d x distribution; N includes odd values and N > 512, so several K/V
blocks of 512 and a scalar tail of keys past the last full vector of 8) it draws Q, K, V with
numpy's default_rng(1000 + case index) (normal(0,1) or uniform[0,1) float32, rounded to the
format by torch), runs F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.FLASH_ATTENTION)
with one thread, scale 1/sqrt(d), without and with the causal mask, writes the inputs and both
outputs as safetensors under DIR (default build/heldout-twin), and asks
`attndev match OUTPUT --inputs IN --algo flash2 --policy torch-cpu-flash-<fmt> --bc 512` for the
share of bit-identical elements and the largest difference in ulps of the output format. Prints
one markdown table (docs/validation.md quotes it). Needs torch and numpy (scripts/validate-torch.sh
creates build/venv-torch) and a built attndev (default build/release/apps/attndev/attndev).
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"bf16": (torch.bfloat16, "BF16"), "fp16": (torch.float16, "F16")}
SHAPES = ((100, 64), (333, 64), (512, 128), (777, 64), (1030, 128), (2048, 64))


def write_safetensors(path, tensors):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/heldout-twin")
    ap.add_argument("--attndev", default="build/release/apps/attndev/attndev")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    cases = [(fmt, n, d, dist) for fmt in DTYPES for n, d in SHAPES
             for dist in ("normal", "uniform")]
    print(f"PyTorch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()} kernels, "
          f"1 thread\n")
    print("| format | N | d | inputs | seed | mask | identical | max ulp |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 1.0
    for i, (fmt, n, d, dist) in enumerate(cases):
        dtype = DTYPES[fmt][0]
        seed = 1000 + i
        rng = np.random.default_rng(seed)
        shape = (1, 1, n, d)
        if dist == "normal":
            draws = [rng.standard_normal(shape, dtype=np.float32) for _ in range(3)]
        else:
            draws = [rng.random(shape, dtype=np.float32) for _ in range(3)]
        q, k, v = (torch.from_numpy(x).to(dtype) for x in draws)
        stem = os.path.join(args.out, f"{fmt}_n{n}_d{d}_{dist}_seed{seed}")
        write_safetensors(stem + ".in.safetensors", {"q": q, "k": k, "v": v})
        for causal in (False, True):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                   scale=1 / math.sqrt(d))
            out_path = stem + (".o_causal" if causal else ".o") + ".safetensors"
            write_safetensors(out_path, {"o": o})
            cmd = [args.attndev, "match", out_path, "--inputs", stem + ".in.safetensors",
                   "--algo", "flash2", "--policy", f"torch-cpu-flash-{fmt}", "--bc", "512",
                   "--br", "64", "-j", "1", "--json"] + (["--causal"] if causal else [])
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                            text=True).stdout)["candidates"][0]
            share = res["identical_fraction"]
            worst = min(worst, share)
            print(f"| {fmt} | {n} | {d} | {dist}(0,1) | {seed} | {'causal' if causal else 'none'} "
                  f"| {100 * share:.3f}% | {res['max_ulp']} |")
    print(f"\nleast identical share: {100 * worst:.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
