#!/usr/bin/env python3
"""Writes the real-kernel fixtures of test/validation/test_torch_fixtures.cpp into
test/data/torch_flash/ (committed; rerun only to change them or to record another PyTorch).

    build/venv-torch/bin/python3 scripts/make_torch_fixtures.py [OUT_DIR]

(build/venv-torch is the project's PyTorch environment: scripts/validate-torch.sh creates it, or
`python3 -m venv build/venv-torch && build/venv-torch/bin/pip install torch numpy`.)

Each fixture is one safetensors file: Q, K, V of shape (1, 1, N, d) in the working format
(bf16 or fp16; drawn in float32 by numpy, then rounded to the format by torch, RNE), and the
outputs of PyTorch's CPU flash-attention kernel on them, `o` without and `o_causal` with the
causal mask, in the same format. The call is scripts/external/torch_attention.py's `sdpa` (the
one the external variants of configs/validation/torch-cpu.json run):

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL, scale=1/sqrt(d))

restricted to the flash backend, so a PyTorch that would route these inputs elsewhere fails here
instead of writing another kernel's output. The metadata records PyTorch's version, the CPU
capability its vectorized kernels were built for, the thread count, the call, the seed and the
distribution. The test needs none of this: it reads the files.
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "external"))
import safetensors_io  # noqa: E402
import torch_attention  # noqa: E402  (exits 77 with a message when torch is missing)

torch = torch_attention.torch

SEED = 2626  # fixed: the fixtures are committed; changing it rewrites them all

# (format, N, d, distribution). Every N in {64, 200} and d in {64, 128} appears in each format;
# N = 200 is above the kernel's q split switch (192) and below its K/V split (512, so one K/V
# block), N = 64 is one q block; the uniform case is at N = 256, a size docs/validation.md
# measured. The total is 675 KB.
CASES = [
    ("bf16", 64, 64, "normal"),
    ("bf16", 200, 128, "normal"),
    ("bf16", 256, 64, "uniform"),
    ("fp16", 64, 128, "normal"),
    ("fp16", 200, 64, "normal"),
]
FILE_DTYPE = {"bf16": "BF16", "fp16": "F16"}


def draw(rng, dist, shape):
    if dist == "normal":
        return rng.standard_normal(shape, dtype=np.float32)
    return rng.random(shape, dtype=np.float32)  # uniform [0, 1)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "test", "data",
                                                                 "torch_flash")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    for fmt, n, d, dist in CASES:
        dtype = torch_attention.DTYPES[fmt][0]
        shape = (1, 1, n, d)
        q, k, v = (torch.from_numpy(draw(rng, dist, shape)).to(dtype) for _ in range(3))
        scale = 1.0 / math.sqrt(d)
        with torch.no_grad():
            outputs = {name: torch_attention.sdpa(q, k, v, scale, causal, "flash")
                       for name, causal in (("o", False), ("o_causal", True))}
        tensors = {name: (t.float().numpy(), FILE_DTYPE[fmt])
                   for name, t in (("q", q), ("k", k), ("v", v), *outputs.items())}
        call = ("with torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION): "
                "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL, "
                f"scale={scale!r})  # o: CAUSAL=False, o_causal: CAUSAL=True")
        metadata = {
            "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(),
            "numpy": np.__version__,
            "call": call,
            "device": "cpu",
            "dtype": fmt,
            "shape": "B=1 H=1 N=%d d=%d" % (n, d),
            "distribution": "normal(0,1)" if dist == "normal" else "uniform(0,1)",
            "inputs": "numpy default_rng(%d) float32 draws, q then k then v, per case in order, "
                      "rounded to %s by torch" % (SEED, fmt),
            "generator": "scripts/make_torch_fixtures.py",
        }
        name = f"{fmt}_n{n}_d{d}_{dist}.safetensors"
        safetensors_io.write(os.path.join(out_dir, name), tensors, metadata)
        print(f"{name}: {os.path.getsize(os.path.join(out_dir, name))} bytes")


if __name__ == "__main__":
    main()
