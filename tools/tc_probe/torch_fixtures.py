#!/usr/bin/env python3
"""Fixtures of the CUDA attention kernels users run, for the twins (scripts/gpu-check/fixtures.sh).

    torch_fixtures.py OUT_DIR [--attndev BIN] [--seed S]

For every case (bf16 and fp16; N 256 and 1024; d 64 and 128; causal and not; B = H = 1, which
also sends FlashAttention-2 through its split-KV path) writes OUT_DIR/<case>/:
    inputs.safetensors      q, k, v (1, 1, N, d) in the working dtype (N(0, 1) rounded)
    flash.safetensors       o of SDPBackend.FLASH_ATTENTION   (PyTorch's FlashAttention-2)
    efficient.safetensors   o of SDPBackend.EFFICIENT_ATTENTION (the memory-efficient kernel)
    cudnn.safetensors       o of SDPBackend.CUDNN_ATTENTION
    math.safetensors        o of SDPBackend.MATH
    flash2-tc.safetensors   o of attndev's own flash2-tc kernel (attndev point --backend cuda)
The golden is not stored: whoever reads a fixture recomputes it from the inputs. Metadata names
the GPU, driver, PyTorch and CUDA versions. A backend PyTorch refuses is left out and named on
stdout; the script prints one line per case and exits 0 when every file was written (at most
16 MiB in all), 1 otherwise, 77 when there is no CUDA PyTorch.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                "external"))
import safetensors_io  # noqa: E402

SKIP = 77
MAX_BYTES = 16 << 20
BACKENDS = ["flash", "efficient", "cudnn", "math"]


def case_name(dtype, n, d, causal):
    return f"{dtype}-n{n}-d{d}" + ("-causal" if causal else "")


def cases():
    for dtype in ("bf16", "fp16"):
        for n in (256, 1024):
            for d in (64, 128):
                for causal in (False, True):
                    yield dtype, n, d, causal


def write_tensor(path, array, dtype, meta):
    code = "BF16" if dtype == "bf16" else "F16"
    safetensors_io.write(path, {"o": (array, code)}, meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--attndev", default="", help="attndev binary for flash2-tc (skipped without)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as F
    except ImportError:
        print("fixtures: SKIPPED: PyTorch is not installed for " + sys.executable)
        return SKIP
    if not torch.cuda.is_available():
        print("fixtures: SKIPPED: PyTorch sees no CUDA device")
        return SKIP
    enums = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
             "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
    torch_dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    meta_base = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                 "cuda": str(torch.version.cuda), "producer": "tools/tc_probe/torch_fixtures.py"}
    try:
        meta_base["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        meta_base["driver"] = "unknown"
    ok = True
    rng = np.random.default_rng(args.seed)
    for dtype, n, d, causal in cases():
        name = case_name(dtype, n, d, causal)
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        meta = dict(meta_base, dtype=dtype, causal=str(causal).lower(), seq_len=str(n),
                    head_dim=str(d))
        t = torch_dtypes[dtype]
        q, k, v = (torch.from_numpy(rng.standard_normal((1, 1, n, d), dtype=np.float32)).to(t)
                   for _ in range(3))
        code = "BF16" if dtype == "bf16" else "F16"
        safetensors_io.write(os.path.join(folder, "inputs.safetensors"),
                             {x: (y.float().numpy(), code) for x, y in
                              (("q", q), ("k", k), ("v", v))}, meta)
        written = []
        for backend in BACKENDS:
            try:
                with sdpa_kernel([enums[backend]]):
                    o = F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(),
                                                       is_causal=causal)
                write_tensor(os.path.join(folder, backend + ".safetensors"),
                             o.float().cpu().numpy(), dtype, dict(meta, backend=backend))
                written.append(backend)
            except RuntimeError as e:
                print(f"fixtures: {name}: {backend} refused by PyTorch: {str(e).splitlines()[0]}")
                ok = ok and backend == "cudnn"  # cuDNN is optional on some builds
        if args.attndev:
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [args.attndev, "point", "--inputs", os.path.join(folder, "inputs.safetensors"),
                       "--algorithm", "flash2-tc", "--backend", "cuda", "--policy",
                       "kernel-" + dtype, "--dump", tmp] + (["--causal"] if causal else [])
                r = subprocess.run(cmd, capture_output=True, text=True, check=False)
                found = [f for f in glob.glob(os.path.join(tmp, "*.safetensors"))
                         if "flash2-tc" in os.path.basename(f)]
                if r.returncode == 0 and found:
                    shutil.copy(found[0], os.path.join(folder, "flash2-tc.safetensors"))
                    written.append("flash2-tc")
                else:
                    print(f"fixtures: {name}: flash2-tc failed (exit {r.returncode}): "
                          f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
                    ok = False
        print(f"fixtures: {name}: {', '.join(written)}")
    total = sum(os.path.getsize(f) for f in glob.glob(os.path.join(args.out, "*", "*")))
    print(f"fixtures: {total} bytes in {args.out} (limit {MAX_BYTES})")
    if total > MAX_BYTES:
        print("fixtures: FAIL: over the size limit")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
