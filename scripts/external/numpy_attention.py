#!/usr/bin/env python3
"""A small external implementation for attndev's external-variant protocol, with numpy alone.

    numpy_attention.py INPUTS OUTPUT [--dtype float32|float64] [--causal true|false]
                                     [--fail crash|exit|hang|shape|nan|none]

Reads Q, K, V from INPUTS (safetensors, (B, H, N, d)), computes baseline attention
softmax(Q K^T / sqrt(d)) V in the working dtype (numpy's float32 or float64 arithmetic, the
row max subtracted before exp), and writes O to OUTPUT (safetensors, tensor "o", F32 or F64).

It exists so that the protocol is exercised end to end without PyTorch (CI has numpy from
Debian's python3-numpy), including each way an external command can go wrong (--fail): a crash
(SIGABRT), a non-zero exit with a message on stderr, exit status 77 ("cannot run here": the row
says skipped), a hang past attndev's timeout, an output of the wrong shape, NaNs in the output, no
output file at all.

The same computation in worker form (one process per run, docs/configs.md#external-workers):

    python3 python/attndev/worker.py scripts/external/numpy_attention.py:worker_point \
        [--dtype float32|float64] [--fail crash|exit|skip|hang|shape|nan|none [--fail-at N]]

worker_point takes the causal flag from the point's axes; --fail-at N fails from the worker's Nth
point on (default 1: every point), so that a crash or hang mid-run is followed by a fresh worker
that computes the next point again.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def attention(q, k, v, causal, dtype):
    q, k, v = (x.astype(dtype) for x in (q, k, v))
    scale = dtype(1.0 / np.sqrt(q.shape[-1]))
    s = (q @ np.swapaxes(k, -1, -2)) * scale  # (B, H, N_q, N_kv)
    if causal:
        # Bottom-right aligned, as attndev and FlashAttention >= 2.1: row i sees j <= i + N_kv - N_q.
        n_q, n_kv = s.shape[-2], s.shape[-1]
        visible = np.arange(n_kv)[None, :] <= np.arange(n_q)[:, None] + (n_kv - n_q)
        s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)  # a fully masked row: exp(-inf) = 0 everywhere, O = 0
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    return (p @ v) / np.where(l > 0, l, 1)


_calls = 0  # points this worker process has computed, for --fail-at


def worker_point(q, k, v, meta):
    """attndev.worker's entry: O of one point, as main() computes it, from arrays and the axes."""
    global _calls
    _calls += 1
    ap = argparse.ArgumentParser(prog="numpy_attention.py:worker_point")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--fail", default="none",
                    choices=["none", "crash", "exit", "skip", "hang", "shape", "nan"])
    ap.add_argument("--fail-at", type=int, default=1)
    a = ap.parse_args(meta["args"])
    fail = a.fail if _calls >= a.fail_at else "none"
    if fail == "crash":
        os.abort()
    if fail == "exit":
        print("numpy_attention: refusing on purpose (--fail exit)", file=sys.stderr)
        sys.exit(3)
    if fail == "skip":
        print("numpy_attention: cannot run here (--fail skip)", file=sys.stderr)
        sys.exit(77)
    if fail == "hang":
        time.sleep(3600)
    dtype = np.float32 if a.dtype == "float32" else np.float64
    o = attention(q, k, v, bool(meta["axes"].get("causal", False)), dtype)
    if fail == "shape":
        o = o[..., :-1]
    if fail == "nan":
        o = o.copy()
        o.flat[::7] = np.nan
    return o


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs")
    ap.add_argument("output")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--causal", choices=["true", "false"], default="false")
    ap.add_argument("--fail", default="none",
                    choices=["none", "crash", "exit", "skip", "hang", "shape", "nan", "nooutput"])
    a = ap.parse_args()
    tensors, _ = safetensors_io.read(a.inputs)
    if a.fail == "crash":
        os.abort()
    if a.fail == "exit":
        print("numpy_attention: refusing on purpose (--fail exit)", file=sys.stderr)
        sys.exit(3)
    if a.fail == "skip":
        print("numpy_attention: cannot run here (--fail skip)", file=sys.stderr)
        sys.exit(77)  # the protocol's "skipped"
    if a.fail == "hang":
        time.sleep(3600)
    if a.fail == "nooutput":
        return
    dtype = np.float32 if a.dtype == "float32" else np.float64
    o = attention(tensors["q"], tensors["k"], tensors["v"], a.causal == "true", dtype)
    if a.fail == "shape":
        o = o[..., :-1]
    if a.fail == "nan":
        o = o.copy()
        o.flat[::7] = np.nan
    safetensors_io.write(a.output, {"o": (o, "F32" if dtype == np.float32 else "F64")})


if __name__ == "__main__":
    main()
