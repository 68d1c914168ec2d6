#!/usr/bin/env python3
"""PyTorch's attention implementations behind attndev's external-variant protocol.

    torch_attention.py INPUTS OUTPUT --impl IMPL --dtype bf16|fp16|fp32
                       [--device cpu|cuda] [--block-r BR] [--block-c BC] [--causal true|false]
                       [--threads N]
    python3 python/attndev/worker.py scripts/external/torch_attention.py:worker_point \
                       --impl IMPL --dtype bf16|fp16|fp32 [--device ...] [--threads N]

Reads Q, K, V (B, H, N, d) from INPUTS (safetensors, as attndev writes them), runs one
implementation in the working dtype, writes O (tensor "o", the working dtype) to OUTPUT.
Exits 77 (attndev: row "skipped") when the implementation cannot run here, e.g. a CUDA backend
without a GPU or a backend PyTorch refuses for these inputs. The second form is the same
computation as a worker (one process per run; docs/configs.md#external-workers): PyTorch's import
and the device's initialisation are paid once, not per point.

IMPL
  flash      F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.FLASH_ATTENTION). On the
             CPU: aten/src/ATen/native/cpu/FlashAttentionKernel.cpp (fp32 scores, statistics and
             accumulator; exp of the scores as exp_u20; P cast to the working dtype before PV;
             q/kv split sizes 32/512, 64/512 or 256/512 by N_q). On CUDA: FlashAttention-2.
  efficient  SDPBackend.EFFICIENT_ATTENTION (CUDA: xFormers' memory-efficient kernel).
  cudnn      SDPBackend.CUDNN_ATTENTION (CUDA: cuDNN's fused attention).
  math       SDPBackend.MATH: _scaled_dot_product_attention_math. Since PyTorch 2.5 it upcasts
             fp16/bf16 Q, K, V to fp32 (unless allow_fp16_bf16_reduction_math_sdp(True)), scales q
             and k by sqrt(scale) each, and casts O back to the working dtype.
  explicit   (q @ k.transpose(-2, -1) * scale).softmax(-1) @ v, every op in the working dtype:
             what a model written without SDPA computes.
  fa1        FA-1 (Dao et al. 2022), Algorithm 1, written with working-dtype tensors (below).
  fa2        FA-2 (Dao 2023), Algorithm 1, written with working-dtype tensors (below).

The fa1/fa2 loops are the "numerical re-implementation" a researcher writes from the paper
(Golden et al. 2024 wrote theirs so that precision, sequence length and tiles can be varied): one
torch op per algorithm step, every op's output a tensor of the working dtype. Inside an op
PyTorch computes in fp32 on the CPU (a matmul or a row sum accumulates in fp32 and rounds once;
an elementwise op converts, computes and rounds once), so state is rounded once per op and per
K/V block, not per element. attndev's framework model (docs/numerics.md) is to model exactly
these ops, so they are kept plain; each op is listed in the comment block of its loop.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

SKIP = 77  # attndev: "cannot run here" -> row skipped

try:
    import torch
except ImportError:
    print("torch_attention: PyTorch is not installed for " + sys.executable +
          " (scripts/validate-torch.sh creates build/venv-torch)", file=sys.stderr)
    sys.exit(SKIP)

DTYPES = {"bf16": (torch.bfloat16, "BF16"), "fp16": (torch.float16, "F16"),
          "fp32": (torch.float32, "F32")}


def visible_mask(n_q, n_kv, row0, col0, rows, cols, device):
    """Causal visibility of a (rows, cols) tile at (row0, col0), bottom-right aligned as
    FlashAttention >= 2.1 and attndev: row i sees column j iff j <= i + (n_kv - n_q)."""
    i = torch.arange(row0, row0 + rows, device=device)[:, None]
    j = torch.arange(col0, col0 + cols, device=device)[None, :]
    return j <= i + (n_kv - n_q)


def fa1(q, k, v, scale, br, bc, causal):
    """FA-1, Algorithm 1 of Dao et al. 2022 (outer loop over K/V blocks, inner over Q blocks;
    O, l, m written back after every step), every tensor in the working dtype of q.

    Op sequence per (j, i), each op's output rounded to the working dtype:
      S      = Q_i @ K_j^T                         matmul (fp32 accumulation inside)
      S      = S * scale                           (exact for power-of-two scales)
      [S     = S.masked_fill(~visible, -inf)       causal only]
      mt     = S.amax(-1)                          row max (exact)
      P      = exp(S - mt)                         sub, exp
      lt     = P.sum(-1)                           row sum (fp32 accumulation inside)
      m_new  = maximum(m_i, mt)                    (exact)
      a      = exp(m_i - m_new)                    sub, exp
      b      = exp(mt - m_new)                     sub, exp
      l_new  = a * l_i + b * lt                    mul, mul, add
      PV     = P @ V_j                             matmul
      O_i    = (l_i * a * O_i + b * PV) / l_new    mul, mul, mul, add, div
      l_i, m_i = l_new, m_new
    """
    B, H, n_q, d = q.shape
    n_kv = k.shape[2]
    dt = q.dtype
    o = torch.zeros_like(q)
    l = torch.zeros(B, H, n_q, 1, dtype=dt, device=q.device)
    m = torch.full((B, H, n_q, 1), -math.inf, dtype=dt, device=q.device)
    for c0 in range(0, n_kv, bc):
        kj, vj = k[:, :, c0:c0 + bc], v[:, :, c0:c0 + bc]
        for r0 in range(0, n_q, br):
            qi = q[:, :, r0:r0 + br]
            oi, li, mi = o[:, :, r0:r0 + br], l[:, :, r0:r0 + br], m[:, :, r0:r0 + br]
            s = qi @ kj.transpose(-2, -1)
            s = s * scale
            if causal:
                s = s.masked_fill(~visible_mask(n_q, n_kv, r0, c0, s.shape[-2], s.shape[-1],
                                                s.device), -math.inf)
            mt = s.amax(-1, keepdim=True)
            # A row of this tile that sees no key: exp(-inf - -inf) would be NaN; it adds nothing.
            mt_safe = torch.where(torch.isinf(mt), torch.zeros_like(mt), mt)
            p = torch.exp(s - mt_safe)
            lt = p.sum(-1, keepdim=True)
            m_new = torch.maximum(mi, mt)
            m_new_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            a = torch.exp(mi - m_new_safe)
            b = torch.exp(mt - m_new_safe)
            l_new = a * li + b * lt
            pv = p @ vj
            l_new_safe = torch.where(l_new == 0, torch.ones_like(l_new), l_new)
            o[:, :, r0:r0 + br] = (li * a * oi + b * pv) / l_new_safe
            l[:, :, r0:r0 + br] = l_new
            m[:, :, r0:r0 + br] = m_new
    return o


def fa2(q, k, v, scale, br, bc, causal):
    """FA-2, Algorithm 1 of Dao 2023 (outer loop over Q blocks; unnormalized accumulator
    rescaled by exp(m_old - m_new); one division at the end), every tensor in the working dtype.

    Op sequence per (i, j), each op's output rounded to the working dtype:
      S      = Q_i @ K_j^T                         matmul (fp32 accumulation inside)
      S      = S * scale
      [S     = S.masked_fill(~visible, -inf)       causal only]
      m_new  = maximum(m, S.amax(-1))              row max, max (exact)
      P      = exp(S - m_new)                      sub, exp
      a      = exp(m - m_new)                      sub, exp
      l      = a * l + P.sum(-1)                   mul, row sum, add
      O      = a * O + P @ V_j                     mul, matmul, add
      m      = m_new
    then O_i = O / l                               div
    """
    B, H, n_q, d = q.shape
    n_kv = k.shape[2]
    dt = q.dtype
    out = torch.empty_like(q)
    for r0 in range(0, n_q, br):
        qi = q[:, :, r0:r0 + br]
        rows = qi.shape[2]
        o = torch.zeros(B, H, rows, d, dtype=dt, device=q.device)
        l = torch.zeros(B, H, rows, 1, dtype=dt, device=q.device)
        m = torch.full((B, H, rows, 1), -math.inf, dtype=dt, device=q.device)
        for c0 in range(0, n_kv, bc):
            kj, vj = k[:, :, c0:c0 + bc], v[:, :, c0:c0 + bc]
            s = qi @ kj.transpose(-2, -1)
            s = s * scale
            if causal:
                s = s.masked_fill(~visible_mask(n_q, n_kv, r0, c0, s.shape[-2], s.shape[-1],
                                                s.device), -math.inf)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            # Rows that have seen no key yet: keep exp() away from -inf - -inf.
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - m_safe)
            a = torch.exp(m - m_safe)
            l = a * l + p.sum(-1, keepdim=True)
            o = a * o + p @ vj
            m = m_new
        out[:, :, r0:r0 + rows] = o / torch.where(l == 0, torch.ones_like(l), l)
    return out


def sdpa(q, k, v, scale, causal, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
              "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[backend]
    with sdpa_kernel(chosen):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                scale=scale)


def explicit(q, k, v, scale, causal):
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        n_q, n_kv = q.shape[2], k.shape[2]
        s = s.masked_fill(~visible_mask(n_q, n_kv, 0, 0, n_q, n_kv, s.device), -math.inf)
    return s.softmax(-1) @ v


def parser(prog=None, per_point=True):
    """The options of both forms; the per-point form also takes the two file paths."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    if per_point:
        ap.add_argument("inputs")
        ap.add_argument("output")
    ap.add_argument("--impl", required=True,
                    choices=["flash", "efficient", "cudnn", "math", "explicit", "fa1", "fa2"])
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N)")
    ap.add_argument("--block-r", type=int, default=None,
                    help="Br of the fa1/fa2 loops (default: the point's block_r in worker form, "
                         "else 64)")
    ap.add_argument("--block-c", type=int, default=None, help="Bc of the fa1/fa2 loops (as Br)")
    ap.add_argument("--causal", choices=["true", "false"], default=None,
                    help="default: the point's causal axis in worker form, else false")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    return ap


def setup(a, ap):
    """Checks and process-wide settings, once per process (per point, or per worker)."""
    if (a.block_r is not None and a.block_r < 1) or (a.block_c is not None and a.block_c < 1):
        ap.error("--block-r and --block-c must be >= 1")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"torch_attention: --device {a.device}: no CUDA device for PyTorch "
              f"{torch.__version__}", file=sys.stderr)
        sys.exit(SKIP)


def compute(q, k, v, a, causal, block_r, block_c):
    """O of one point in the working dtype (a tensor on a.device) from numpy q, k, v (B, H, N, d)."""
    dtype, _ = DTYPES[a.dtype]
    # The arrays hold values of the working dtype (attndev rounded them): the casts are exact.
    q, k, v = (torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
               .to(a.device).to(dtype) for x in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1])
    with torch.no_grad():
        try:
            if a.impl == "fa1":
                o = fa1(q, k, v, scale, block_r, block_c, causal)
            elif a.impl == "fa2":
                o = fa2(q, k, v, scale, block_r, block_c, causal)
            elif a.impl == "explicit":
                o = explicit(q, k, v, scale, causal)
            else:
                o = sdpa(q, k, v, scale, causal, a.impl)
        except RuntimeError as e:
            # e.g. "No available kernel": this backend does not take these inputs here.
            if "No available kernel" in str(e) or "not available" in str(e):
                print(f"torch_attention: {a.impl} on {a.device}: {e}".splitlines()[0],
                      file=sys.stderr)
                sys.exit(SKIP)
            raise
        if o.is_cuda:
            torch.cuda.synchronize()
    return o.to(dtype)


_worker_options = {}  # parsed worker arguments, by their words: set up once per process


def worker_point(q, k, v, meta):
    """The entry of the worker form (python/attndev/worker.py; docs/configs.md#external-workers):

        python3 python/attndev/worker.py scripts/external/torch_attention.py:worker_point \
            --impl fa2 --dtype bf16 [--device cuda] [--threads N]

    PyTorch is imported and the device set up once per run, not once per point. causal, and Br/Bc
    of fa1/fa2, come from the point's axes unless given (a worker whose loops use the tiles is
    configured with "tiles": true, so that it is asked once per tile point). Returns O as a tensor
    of the working dtype: written to {output} exactly as the per-point form writes it."""
    key = tuple(meta["args"])
    if key not in _worker_options:
        ap = parser("torch_attention.py:worker_point", per_point=False)
        a = ap.parse_args(meta["args"])
        setup(a, ap)
        _worker_options[key] = a
    a = _worker_options[key]
    axes = meta["axes"]
    causal = a.causal == "true" if a.causal is not None else bool(axes.get("causal", False))
    block_r = a.block_r or int(axes.get("block_r", 64))
    block_c = a.block_c or int(axes.get("block_c", 64))
    return compute(q, k, v, a, causal, block_r, block_c)


def main():
    ap = parser()
    a = ap.parse_args()
    setup(a, ap)
    tensors, _ = safetensors_io.read(a.inputs)
    o = compute(tensors["q"], tensors["k"], tensors["v"], a, a.causal == "true",
                a.block_r or 64, a.block_c or 64)
    o = o.float().cpu().numpy()
    safetensors_io.write(a.output, {"o": (o, DTYPES[a.dtype][1])},
                         {"torch": torch.__version__, "impl": a.impl, "device": a.device,
                          "dtype": a.dtype})


if __name__ == "__main__":
    main()
