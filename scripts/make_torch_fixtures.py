#!/usr/bin/env python3
"""Writes the real-kernel fixtures of test/validation/test_torch_fixtures.cpp into
test/data/torch_flash/ (committed; rerun only to change them or to record another PyTorch).

    build/venv-torch/bin/python3 scripts/make_torch_fixtures.py [OUT_DIR]

(build/venv-torch is the project's PyTorch environment: scripts/validate-torch.sh creates it, or
`python3 -m venv build/venv-torch && build/venv-torch/bin/pip install torch numpy`.)

Each fixture is one safetensors file: Q, K, V of shape (1, 1, N, d) in the working format
(bf16 or fp16; drawn in float32 by numpy, then rounded to the format by torch, RNE), and the
outputs of PyTorch's CPU flash-attention kernel on them, `o` without and `o_causal` with the
causal mask, in the same format. A case may give Q fewer rows than K and V (N_q < N_kv, a long
sequence at a small file size); it then has `o` only, since PyTorch aligns the causal mask to the
top left and attndev to the bottom right, which differ there. The call is
scripts/external/torch_attention.py's `sdpa` (the one the external variants of
configs/validation/torch-cpu.json run):

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL, scale=1/sqrt(d))

restricted to the flash backend, so a PyTorch that would route these inputs elsewhere fails here
instead of writing another kernel's output. PyTorch ships its CPU kernels built for AVX2 and for
AVX-512 and picks the widest the CPU has; each case names the build it records, and the cases of
each build run in a process of their own with ATEN_CPU_CAPABILITY set before torch is imported
(a CPU without AVX-512 cannot write the AVX-512 cases: the script stops with a message). The
metadata records PyTorch's version, the CPU capability its vectorized kernels were built for, the
thread count, the call, the seed and the distribution. The test needs none of this: it reads the
files.
"""
import math
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "external"))
import safetensors_io  # noqa: E402

SEED = 2626  # fixed: the fixtures are committed; changing it rewrites them all

# (format, N_q, N_kv, d, distribution, PyTorch CPU build). Every N in {64, 200} and d in
# {64, 128} appears in each format; N = 200 is above the kernel's q split switch (192) and below
# its K/V split (512, so one K/V block), N = 64 is one q block; the uniform case is at N = 256, a
# size docs/validation.md measured. The AVX-512 cases: N = 200 is 12 vectors of 16 keys and a
# scalar tail of 8 (AVX2: 25 vectors of 8, no tail); N_kv = 2056 is four full K/V blocks of 512
# and a fifth of 8 keys, all of them scalar tail under AVX-512, past the N = 2048 the earlier
# held-out shapes stopped at, with 32 query rows (the q split 32) to keep the file small. New
# cases go last: the draws run in case order, so the earlier files keep their bytes.
# The total is 1.33 MB.
CASES = [
    ("bf16", 64, 64, 64, "normal", "avx2"),
    ("bf16", 200, 200, 128, "normal", "avx2"),
    ("bf16", 256, 256, 64, "uniform", "avx2"),
    ("fp16", 64, 64, 128, "normal", "avx2"),
    ("fp16", 200, 200, 64, "normal", "avx2"),
    ("bf16", 200, 200, 64, "normal", "avx512"),
    ("fp16", 32, 2056, 64, "normal", "avx512"),
]
FILE_DTYPE = {"bf16": "BF16", "fp16": "F16"}


def draw(rng, dist, shape):
    if dist == "normal":
        return rng.standard_normal(shape, dtype=np.float32)
    return rng.random(shape, dtype=np.float32)  # uniform [0, 1)


def fixture_name(fmt, n_q, n_kv, d, dist, build):
    n = f"n{n_q}" if n_q == n_kv else f"q{n_q}_kv{n_kv}"
    return f"{fmt}_{n}_d{d}_{dist}" + ("" if build == "avx2" else f"_{build}") + ".safetensors"


def write_cases(out_dir, build):
    """The cases of one build; ATEN_CPU_CAPABILITY=build is set before torch is imported."""
    import torch_attention  # exits 77 with a message when torch is missing
    torch = torch_attention.torch
    got = torch.backends.cpu.get_cpu_capability()
    if got.lower() != build:
        print(f"make_torch_fixtures.py: PyTorch runs its {got} kernels here, not {build.upper()} "
              f"(the CPU lacks it): the {build} fixtures cannot be written on this machine",
              file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    for fmt, n_q, n_kv, d, dist, case_build in CASES:
        # Every case draws, in order, whichever build writes it.
        draws = [draw(rng, dist, (1, 1, n, d)) for n in (n_q, n_kv, n_kv)]
        if case_build != build:
            continue
        dtype = torch_attention.DTYPES[fmt][0]
        q, k, v = (torch.from_numpy(x).to(dtype) for x in draws)
        scale = 1.0 / math.sqrt(d)
        masks = (("o", False), ("o_causal", True)) if n_q == n_kv else (("o", False),)
        with torch.no_grad():
            outputs = {name: torch_attention.sdpa(q, k, v, scale, causal, "flash")
                       for name, causal in masks}
        tensors = {name: (t.float().numpy(), FILE_DTYPE[fmt])
                   for name, t in (("q", q), ("k", k), ("v", v), *outputs.items())}
        call = ("with torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION): "
                "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL, "
                f"scale={scale!r})  # o: CAUSAL=False" +
                (", o_causal: CAUSAL=True" if n_q == n_kv else ""))
        metadata = {
            "torch": torch.__version__,
            "cpu_capability": got,
            "threads": torch.get_num_threads(),
            "numpy": np.__version__,
            "call": call,
            "device": "cpu",
            "dtype": fmt,
            "shape": ("B=1 H=1 N=%d d=%d" % (n_q, d) if n_q == n_kv else
                      "B=1 H=1 N_q=%d N_kv=%d d=%d" % (n_q, n_kv, d)),
            "distribution": "normal(0,1)" if dist == "normal" else "uniform(0,1)",
            "inputs": "numpy default_rng(%d) float32 draws, q then k then v, per case in order, "
                      "rounded to %s by torch" % (SEED, fmt),
            "generator": "scripts/make_torch_fixtures.py",
        }
        if build != "avx2":  # the AVX2 files predate the key; their bytes stay as they were
            metadata["aten_cpu_capability"] = build
        name = fixture_name(fmt, n_q, n_kv, d, dist, case_build)
        safetensors_io.write(os.path.join(out_dir, name), tensors, metadata)
        print(f"{name}: {os.path.getsize(os.path.join(out_dir, name))} bytes")
    return 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--build=")]
    build = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--build=")), None)
    out_dir = args[0] if args else os.path.join(HERE, "..", "test", "data", "torch_flash")
    os.makedirs(out_dir, exist_ok=True)
    if build:
        return write_cases(out_dir, build)
    for b in sorted({c[5] for c in CASES}):
        rc = subprocess.run([sys.executable, os.path.abspath(__file__), out_dir, "--build=" + b],
                            env=dict(os.environ, ATEN_CPU_CAPABILITY=b)).returncode
        if rc != 0:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
