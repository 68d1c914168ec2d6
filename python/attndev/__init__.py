"""attndev in Python: the emulator, the FP64 golden and the deviation metrics of the attndev CLI on
numpy arrays and PyTorch CPU tensors (docs/python.md).

Every function calls the C++ libraries the CLI is built from (the extension module attndev._core);
nothing is re-implemented here. This file only checks arguments (_args.py) and turns arrays into
float64, C-ordered (B, H, N, d) blocks and back:

    import attndev
    q, k, v = attndev.inputs((256, 64), "normal(0,1)", seed=0)   # the CLI's draws for a point
    o = attndev.attention(q, k, v, algo="flash2", policy="kernel-bf16", block=(64, 64))
    g = attndev.golden(q, k, v, policy="kernel-bf16")
    print(attndev.deviation(o, g, policy="kernel-bf16")["max_abs"])

Shapes: (N, d), (H, N, d) or (B, H, N, d); the output has q's. Values come back as float64 (every
value is exactly representable in the policy's output format, so nothing is lost); a PyTorch
tensor in gives a float64 PyTorch tensor out, sharing the result's memory.
"""

import json
import os
import time

import numpy as np

from . import _args


def _native():
    """The compiled extension, attndev._core, imported on first use: `python -m attndev.worker`
    (pure Python, numpy alone) must run where only the source tree is on the path."""
    from . import _core
    return _core


__all__ = ["Error", "attention", "golden", "deviation", "match", "presets", "algorithms",
           "policy_formats", "formats", "round", "inputs", "read_safetensors",
           "write_safetensors", "mma"]


def __getattr__(name):
    # attndev.Error resolves through here (PEP 562), so that importing the package does not load
    # the extension. Error: a bad argument (unknown policy, algorithm, format; impossible tiles or
    # shapes); the message is the CLI's, with the keyword in place of the flag (``policy: unknown
    # preset "kernel-bf61" (did you mean "kernel-bf16"?) ...``). A subclass of ValueError.
    if name == "Error":
        return _native().Error
    raise AttributeError(f"module 'attndev' has no attribute {name!r}")


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _as_float64(x, name):
    """float64, C order, on the CPU; no copy when x already is (numpy or PyTorch)."""
    if _is_torch(x):
        if x.device.type != "cpu":
            raise _args.error(f"{name}: a tensor on {x.device}; attndev emulates on the CPU: pass "
                              f"{name}.cpu()")
        import torch
        x = x.detach().to(torch.float64).contiguous().numpy()
    try:
        return np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError):
        raise _args.error(f"{name}: expected a real array or tensor, got {type(x).__name__} "
                          f"{_args.show(x)}") from None


def _as_bhnd(x, name):
    a = _as_float64(x, name)
    if a.ndim == 2:
        return a.reshape(1, 1, *a.shape)
    if a.ndim == 3:
        return a.reshape(1, *a.shape)
    if a.ndim == 4:
        return a
    raise _args.error(f"{name}: shape {a.shape}: expected (N, d), (H, N, d) or (B, H, N, d)")


def _ndim(x):
    return x.dim() if _is_torch(x) else np.ndim(x)


def _shape_like(out, template):
    nd = _ndim(template)
    if nd < 4:
        out = out.reshape(out.shape[4 - nd:])
    if _is_torch(template):
        import torch
        return torch.from_numpy(out)
    return out


def _policy_text(policy):
    """A preset name, a JSON object text, or a dict ({"base": "kernel-bf16", "prob": "fp32"})."""
    if isinstance(policy, dict):
        return json.dumps(policy)
    if not isinstance(policy, str):
        raise _args.error(f"policy: expected a preset name, a JSON object text or a dict, got "
                          f"{type(policy).__name__} {_args.show(policy)}")
    return policy


def _mask_bias(mask, q, k):
    """PyTorch's attn_mask as the emulator's additive bias: boolean (True keeps a key: 0 / -inf)
    or float (added to the scaled scores), broadcastable to (B, H, N_q, N_kv) as PyTorch
    broadcasts it; dimensions of size 1 stay 1 (the emulator broadcasts them without a copy)."""
    if mask is None:
        return None
    if _is_torch(mask):
        if mask.device.type != "cpu":
            raise _args.error(f"mask: a tensor on {mask.device}: pass mask.cpu()")
        import torch
        mask = mask.detach()
        mask = mask.numpy() if mask.dtype == torch.bool else mask.to(torch.float64).numpy()
    a = np.asarray(mask)
    if a.dtype == np.bool_:
        bias = np.where(a, 0.0, -np.inf)
    elif np.issubdtype(a.dtype, np.floating):
        bias = a.astype(np.float64)
    else:
        raise _args.error(f"mask: dtype {a.dtype}: expected bool (True keeps a key) or a float "
                          "(added to the scaled scores)")
    target = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    try:
        fits = bias.ndim <= 4 and np.broadcast_shapes(bias.shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        raise _args.error(f"mask: shape {bias.shape} does not broadcast to (B, H, N_q, N_kv) = "
                          f"{target}")
    return np.ascontiguousarray(bias.reshape((1,) * (4 - bias.ndim) + bias.shape))


def attention(q, k, v, algo="flash2", policy="kernel-bf16", block=(64, 64), causal=False,
              scale=None, scale_on="scores", threads=0, backend="cpu", timing=False, mask=None):
    """The emulator's output O for q, k, v: what ``attndev point --algo ALGO --policy POLICY --br
    Br --bc Bc [--causal] --inputs FILE --dump DIR`` writes as the variant's O, bit for bit.

    q, k, v are rounded once to the policy's input format (as the CLI rounds a file's inputs),
    then the variant runs. ``block`` is (Br, Bc), two integers; ``scale`` defaults to 1/sqrt(d);
    ``scale_on`` is "scores" or "query"; ``threads`` 0 uses every hardware thread (the result does
    not depend on it). ``mask`` is PyTorch's attn_mask: boolean (True keeps a key) or float (a
    bias added to the scaled scores), broadcastable to (B, H, N_q, N_kv); with ``causal`` both
    apply. Raises Error for bad arguments and RuntimeError when the variant fails or is skipped.
    ``timing=True`` returns (O, {"kernel_s": the emulator's call alone, "total_s": the whole
    call}). Ctrl-C stops the call within one work item of the emulator.
    """
    start = time.perf_counter()
    br, bc = _args.block(block)
    timing = _args.boolean("timing", timing)
    qa, ka, va = _as_bhnd(q, "q"), _as_bhnd(k, "k"), _as_bhnd(v, "v")
    out, kernel_s = _native().attention(
        qa, ka, va, _args.text("algo", algo), _policy_text(policy), br, bc,
        _args.boolean("causal", causal), _args.text("scale_on", scale_on),
        _args.real("scale", scale), _args.integer("threads", threads),
        _args.text("backend", backend), _mask_bias(mask, qa, ka))
    out = _shape_like(out, q)
    if timing:
        return out, {"kernel_s": kernel_s, "total_s": time.perf_counter() - start}
    return out


def golden(q, k, v, causal=False, scale=None, scale_on="scores", policy=None, input_format=None,
           threads=0, mask=None):
    """The FP64 golden: baseline attention with every stage in fp64, on q, k, v rounded to
    ``input_format`` (or the ``policy``'s input format; neither: as given). With the same policy
    and mask as attention() it is the golden ``attndev point`` measures against."""
    if policy is not None and input_format is not None:
        raise _args.error("golden: give policy or input_format, not both")
    if policy is not None:
        input_format = policy_formats(policy)["input"]
    qa, ka, va = _as_bhnd(q, "q"), _as_bhnd(k, "k"), _as_bhnd(v, "v")
    out = _native().golden(
        qa, ka, va, _args.boolean("causal", causal), _args.text("scale_on", scale_on),
        _args.real("scale", scale),
        None if input_format is None else _args.text("input_format", input_format),
        _args.integer("threads", threads), _mask_bias(mask, qa, ka))
    return _shape_like(out, q)


def deviation(output, golden, policy=None, format=None):
    """The CLI's metrics of ``output`` against ``golden`` (max_abs, mean_abs, std_abs, rmse,
    rel_l2, max_rel, max_rel_floor, cos_sim, nan_count, inf_count, worst_index, count) as a dict.
    max_rel is floored at one unit roundoff of the output format at max|golden|: the ``policy``'s
    output format, or ``format`` (default fp64, the smallest floor)."""
    if policy is not None and format is not None:
        raise _args.error("deviation: give policy or format, not both")
    fmt = policy_formats(policy)["output"] if policy is not None else (format or "fp64")
    out = _as_float64(output, "output").reshape(-1)
    ref = _as_float64(golden, "golden").reshape(-1)
    return _native().deviation(out, ref, _args.text("format", fmt))


def match(output, q, k, v, algos=("baseline", "flash1", "flash2"), policies=None,
          block_r=(64,), block_c=(16, 32, 64, 128, 256, 512), causal=False, scale_on="scores",
          threads=0):
    """``attndev match``: which emulated kernel (algorithm x policy x tiles) reproduces
    ``output``, computed by some implementation from q, k, v. Returns {"verdict",
    "formats_holding_output", "candidates"}: the candidates ranked as the CLI ranks them (most
    bit-identical elements first), each a dict with the keys of ``attndev match --json``.
    ``policies`` None: the presets whose output format holds every value of ``output``."""
    pols = [] if policies is None else [_policy_text(p) for p in policies]
    return _native().match(_as_bhnd(output, "output"), _as_bhnd(q, "q"), _as_bhnd(k, "k"),
                           _as_bhnd(v, "v"), _args.strings("algos", algos), pols,
                           _args.integers("block_r", block_r), _args.integers("block_c", block_c),
                           _args.boolean("causal", causal), _args.text("scale_on", scale_on),
                           _args.integer("threads", threads))


def presets():
    """The precision policy presets (``attndev list presets``): name, description, stages."""
    out = _native().presets()
    for p in out:
        p["stages"] = json.loads(p["stages"])
    return out


def algorithms():
    """The emulator's algorithms (``attndev list algorithms``): name and description."""
    return _native().algorithms()


def formats():
    """Every number format ``round`` knows, as ``attndev list formats`` lists them: the policies'
    stage formats (fp64 ... fp8-e5m2) first, then the quantization formats (fp6, fp4, e8m0, ue4m3,
    int8, int4), which only the quantized recipes and ``quantize`` use."""
    return _native().formats()


def policy_formats(policy):
    """{"input", "output", "label"} of a policy (preset name, JSON text or dict)."""
    return _native().policy_formats(_policy_text(policy))


def round(x, format):  # noqa: A001 (attndev.round, as the issue names it; builtins.round unused)
    """x rounded once to ``format`` (any of ``formats()``): round-to-nearest-even straight from
    float64, overflowing as the format does (to inf for the IEEE formats; see ``attndev list
    formats``). Returns float64 values of x's shape (a float64 tensor for a tensor), each exactly
    representable in the format: ``attndev.round(x, "bf16")`` is what a cast to bfloat16 stores."""
    a = _as_float64(x, "x")
    out = _native().round(a.reshape(-1), _args.text("format", format)).reshape(a.shape)
    if _is_torch(x):
        import torch
        return torch.from_numpy(out)
    return out


def inputs(shape, distribution="normal(0,1)", seed=0, format="fp64", seq_kv=None):
    """Q, K, V as the CLI draws them for a point: ``attndev point --n N --d D [--batch B --heads
    H] [--n-kv SEQ_KV] --dist DISTRIBUTION --seed SEED`` reads these values, bit for bit.

    ``shape`` is q's, (N, d), (H, N, d) or (B, H, N, d); k and v have ``seq_kv`` rows (default
    N). ``distribution``: "normal(mean,std)", "uniform(lo,hi)" or "outlier(std,p)", as in
    configs. ``format`` "fp64" gives the raw draws (attention() then rounds them to the policy's
    input format exactly as the CLI does); another format gives them rounded to it, as the CLI
    stores them (``inputs-<format>.safetensors`` of ``point --dump``). Counter-based: a value
    depends on (seed, tensor, b, h, row, col) only."""
    if not isinstance(shape, (tuple, list)) or not 2 <= len(shape) <= 4:
        raise _args.error(f"shape: expected (N, d), (H, N, d) or (B, H, N, d), got "
                          f"{_args.show(shape)}")
    dims = [_args.integer(f"shape[{i}]", x, lo=1) for i, x in enumerate(shape)]
    full = [1] * (4 - len(dims)) + dims
    n_kv = full[2] if seq_kv is None else _args.integer("seq_kv", seq_kv, lo=1)
    q, k, v = _native().inputs(full[0], full[1], full[2], n_kv, full[3],
                               _args.text("distribution", distribution),
                               _args.integer("seed", seed, hi=_args.SEED_MAX),
                               _args.text("format", format))
    lead = 4 - len(dims)
    return q.reshape(q.shape[lead:]), k.reshape(k.shape[lead:]), v.reshape(v.shape[lead:])


def read_safetensors(path, metadata=False):
    """{name: float64 array} of a safetensors file (F64, F32, F16 and BF16 tensors, decoded
    exactly), read with the CLI's checked reader; ``metadata=True`` returns (tensors,
    {"__metadata__" strings})."""
    entries, meta = _native().read_safetensors(os.fspath(path))
    tensors = {name: values.reshape(shape) for name, _dtype, shape, values in entries}
    return (tensors, meta) if _args.boolean("metadata", metadata) else tensors


_DTYPE_OF = {"float64": "F64", "float32": "F32", "float16": "F16", "torch.float64": "F64",
             "torch.float32": "F32", "torch.float16": "F16", "torch.bfloat16": "BF16"}


def write_safetensors(path, tensors, dtype=None, metadata=None):
    """Writes {name: array or tensor} as a safetensors file, atomically (a temporary file, then a
    rename), with the CLI's writer: each value rounded once (round-to-nearest-even) to its dtype,
    "F64", "F32", "F16" or "BF16": ``dtype`` one for every tensor, a dict per name, or None for
    each array's own (a bfloat16 tensor is written as BF16). ``metadata``: {str: str}."""
    if not isinstance(tensors, dict) or not tensors:
        raise _args.error(f"tensors: expected a non-empty dict of name -> array, got "
                          f"{_args.show(tensors)}")
    if isinstance(dtype, dict):
        _args.known_keys("dtype", dtype, list(tensors))
    names, dtypes, shapes, values = [], [], [], []
    for name, t in tensors.items():
        names.append(_args.text("tensors key", name))
        d = dtype.get(name) if isinstance(dtype, dict) else dtype
        if d is None:
            d = _DTYPE_OF.get(str(t.dtype) if hasattr(t, "dtype") else "")
            if d is None:
                raise _args.error(f"tensors[{name!r}]: dtype {getattr(t, 'dtype', type(t))} has no "
                                  "safetensors float type here: give dtype=\"F32\" (or F64, F16, BF16)")
        dtypes.append(_args.text(f"dtype of {name!r}", d))
        a = _as_float64(t, f"tensors[{name!r}]")
        shapes.append(list(a.shape))
        values.append(a.reshape(-1))
    meta = _args.known_keys("metadata", metadata or {}, list(metadata or {}))
    for key, val in meta.items():
        _args.text("metadata key", key)
        _args.text(f"metadata[{key!r}]", val)
    _native().write_safetensors(os.fspath(path), names, dtypes, shapes, values, meta)


# ---- Quantization (python/src/quantize.cpp; docs/python.md, "Quantization") ----------------------
__all__ += ["quantize", "quant_schemes"]


def quantize(x, scheme):
    """Quantize x by a named scheme (``quant_schemes()``) and return ``(dequantized, scales)``.

    x is read along its last axis (blocks of 32 for ``mxfp8-e4m3``, 16 for ``nvfp4``, ...); token
    schemes (``int8-per-block-128``, ``int8-per-thread-q``, ...) group rows of each matrix
    x[..., :, :] as SageAttention groups tokens. ``dequantized`` is float64 with x's shape: element
    x block scale x tensor scale, exact. ``scales``: one per block, shaped x.shape[:-1] +
    (blocks per row,) for last-axis schemes, x.shape[:-2] + (groups per matrix,) for token
    schemes, (1,) for ``fp8-e4m3-per-tensor``. An all-zero block gives zeros.
    """
    torch_in = _is_torch(x)
    a = _as_float64(x, "x")
    if a.ndim == 0:
        raise _native().Error("x: a scalar; quantize needs at least one axis")
    shape = a.shape
    m = a.reshape(1, 1, shape[0]) if a.ndim == 1 else a.reshape(-1, shape[-2], shape[-1])
    deq, scales, info = _native().quantize(np.ascontiguousarray(m), scheme)
    deq = deq.reshape(shape)
    per_matrix = info["groups_per_matrix"]
    if info["granularity"] == "per-tensor":
        scales = scales.reshape(1)
    elif info["granularity"] == "row-groups":
        scales = scales.reshape(shape[:-1] + (per_matrix // (shape[-2] if a.ndim > 1 else 1),))
    elif info["granularity"] == "per-token":
        scales = scales.reshape(shape[:-1])
    else:
        scales = scales.reshape(shape[:-2] + (per_matrix,))
    if torch_in:
        import torch
        return torch.from_numpy(deq), torch.from_numpy(scales)
    return deq, scales


def quant_schemes():
    """The schemes ``quantize`` knows: name, description, whether they group tokens, block."""
    return [dict(s) for s in _native().quant_schemes()]


# ---- The tensor cores' arithmetic (docs/numerics.md, "Tensor cores"; docs/python.md) ----

def mma(a, b, c, arch="sm90", input="bf16", instruction="mma", output="fp32"):
    """D = A B + C as the tensor cores of ``arch`` compute it, bit for bit (numerics/mma.hpp):
    over k in increasing order, one fused dot-add per block of the architecture's products
    (exact products aligned with C to the largest exponent, truncated to F fraction bits, summed
    exactly, rounded once), each D fed to the next as C.

    a (M, K) and b (K, N) hold values of ``input`` ("fp16", "bf16", "tf32" (fp32 values, which
    the hardware truncates to tf32), "e4m3", "e5m2"); c (M, N) values of the accumulator type
    ``output`` ("fp32", or "fp16" for fp16 and fp8 inputs). ``arch`` is "sm80", "sm89", "sm90"
    or "sm100"; ``instruction`` "mma" (mma.sync), "wgmma" (sm90) or "tcgen05" (sm100), which
    decides only what exists (their arithmetic is the architecture's). Returns D (M, N) as
    float64. Raises Error for an unknown or unsupported choice (fp8 on sm80, ...), mismatched
    shapes or a value that the input type cannot hold.
    """
    mats = []
    for name, x in (("a", a), ("b", b), ("c", c)):
        m = _as_float64(x, name)
        if m.ndim != 2:
            raise _native().Error(f"{name}: shape {m.shape}: expected a matrix")
        mats.append(m)
    for name, value in (("arch", arch), ("input", input), ("instruction", instruction),
                        ("output", output)):
        if not isinstance(value, str):
            raise _native().Error(f"{name}: expected a string, got {type(value).__name__}")
    return _native().mma(mats[0], mats[1], mats[2], arch, input, instruction, output)
