"""A PyTorch model's attention through attndev's emulator (docs/python.md).

    with attndev.torch.emulate(policy="kernel-bf16", algo="flash2"):
        logits = model(input_ids).logits        # every SDPA call ran the emulated kernel

    report = attndev.torch.compare(model, {"input_ids": ids},
                                   variants=[{"algo": "flash2", "policy": "kernel-bf16"},
                                             {"algo": "baseline", "policy": "torch-math-bf16"}])

emulate() replaces torch.nn.functional.scaled_dot_product_attention while it is active: the
forward pass only, on CPU tensors, with PyTorch's mask semantics (is_causal is the upper-left
aligned lower triangle; a boolean attn_mask keeps True; a float one is added to the scores). The
emulator has no arbitrary masks: a mask is accepted when it is all-visible or exactly the causal
triangle (then run as the emulator's causal mask, which equals PyTorch's for L == S); anything else,
dropout, gradients and non-CPU tensors raise NotImplementedError saying so. Models reach SDPA
through the module attribute (Hugging Face transformers with attn_implementation="sdpa" does).
"""

import contextlib
import copy

import torch

from . import attention as _attention
from . import deviation as _deviation
from . import golden as _golden

__all__ = ["emulate", "compare", "format_report"]

def _unsupported(what):
    return NotImplementedError(f"attndev.torch.emulate: {what}")


def _causal_triangle(L, S):
    # PyTorch's is_causal: torch.ones(L, S).tril(diagonal=0), aligned at the upper left.
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)


def _mask_kind(attn_mask, L, S):
    """None (every key visible) or "causal", for the masks the emulator has; raises otherwise."""
    if attn_mask is None:
        return None
    if attn_mask.dtype == torch.bool:
        visible = attn_mask
    elif attn_mask.is_floating_point():
        finite = torch.isfinite(attn_mask)
        if bool((attn_mask[finite] != 0).any()) or bool((attn_mask[~finite] > 0).any()):
            raise _unsupported("a float attn_mask with values other than 0 and -inf (an additive "
                               "bias) is not emulated")
        visible = finite
    else:
        raise _unsupported(f"an attn_mask of dtype {attn_mask.dtype}")
    visible = visible.expand(*visible.shape[:-2], L, S)
    if bool(visible.all()):
        return None
    if bool((visible == _causal_triangle(L, S)).all()):
        return "causal"
    raise _unsupported("attn_mask is neither all-visible nor the causal triangle (padding or "
                       "another pattern): the emulator has no arbitrary masks; run unpadded "
                       "sequences one at a time")


def _causal_for(kind, is_causal, L, S):
    causal = is_causal or kind == "causal"
    if causal and L != S:
        # The emulator aligns the causal mask at the lower right (FlashAttention >= 2.1);
        # PyTorch's is_causal at the upper left. They agree only for square masks.
        raise _unsupported(f"a causal mask with L={L} != S={S} (PyTorch aligns it at the upper "
                           "left, the emulator at the lower right)")
    return causal


class _Emulation:
    """The state of one emulate() block: what runs and what each call saw."""

    def __init__(self, policy, algo, block, threads, record):
        self.policy, self.algo, self.block, self.threads = policy, algo, tuple(block), threads
        self.record = record
        self.calls = 0
        self.records = []  # (q, k, v, causal, scale, out) per call, when record is set

    def sdpa(self, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.device.type != "cpu":
                raise _unsupported(f"{name} is on {t.device}; the emulator runs on the CPU")
        if dropout_p:
            raise _unsupported(f"dropout_p={dropout_p}: put the model in eval() mode")
        if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
            raise _unsupported("the forward pass only: run under torch.no_grad() (or "
                               "torch.inference_mode())")
        if value.shape[-1] != query.shape[-1]:
            raise _unsupported(f"value's head dim {value.shape[-1]} != query's {query.shape[-1]}")
        L, S = query.shape[-2], key.shape[-2]
        if enable_gqa and key.shape[-3] != query.shape[-3]:
            repeat = query.shape[-3] // key.shape[-3]
            key = key.repeat_interleave(repeat, dim=-3)
            value = value.repeat_interleave(repeat, dim=-3)
        causal = _causal_for(_mask_kind(attn_mask, L, S), is_causal, L, S)
        lead = query.shape[:-2]
        q = query.reshape(-1, L, query.shape[-1])
        k = key.expand(*lead, S, key.shape[-1]).reshape(-1, S, key.shape[-1])
        v = value.expand(*lead, S, value.shape[-1]).reshape(-1, S, value.shape[-1])
        out = _attention(q, k, v, algo=self.algo, policy=self.policy, block=self.block,
                         causal=causal, scale=scale, threads=self.threads)
        self.calls += 1
        if self.record:
            self.records.append((q, k, v, causal, scale, out))
        # SDPA returns query's dtype: the emulator's values (exact in the policy's output format)
        # stored in it, as a kernel's output would be in the model.
        return out.to(query.dtype).reshape(*lead, L, value.shape[-1])


@contextlib.contextmanager
def emulate(policy="kernel-bf16", algo="flash2", block=(64, 64), threads=0, record=False):
    """Inside the block, torch.nn.functional.scaled_dot_product_attention runs attndev's emulated
    ``algo`` under ``policy`` with tiles ``block``. Yields an object whose ``calls`` counts the
    calls and, with ``record=True``, whose ``records`` holds each call's (q, k, v, causal, scale,
    out) as float64 (H, N, d) tensors."""
    state = _Emulation(policy, algo, block, threads, record)
    previous = torch.nn.functional.scaled_dot_product_attention
    torch.nn.functional.scaled_dot_product_attention = state.sdpa
    try:
        yield state
    finally:
        torch.nn.functional.scaled_dot_product_attention = previous


def _logits(output):
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "logits"):
        return output.logits
    return output[0]


def _run(model, inputs):
    with torch.no_grad():
        return model(**inputs) if isinstance(inputs, dict) else model(inputs)


_FORMAT_OF_DTYPE = {torch.float64: "fp64", torch.float32: "fp32", torch.bfloat16: "bf16",
                    torch.float16: "fp16"}


def _variant_name(v):
    return v.get("name") or f"{v.get('algo', 'flash2')} {v.get('policy', 'kernel-bf16')}"


def compare(model, inputs, variants, block=(64, 64), threads=0):
    """Runs ``model`` on ``inputs`` once per variant ({"algo", "policy", optional "block",
    "name"}) with its attention emulated, and once as the FP64 golden model (a float64 copy whose
    attention is the golden: baseline with every stage in fp64). ``inputs`` is a tensor or a dict
    of keyword arguments. Returns one dict per variant:

      name, logits: deviation of the logits from the golden model's (attndev.deviation, format of
      the logits' dtype), layers: per attention call in order, "model" (its output against the
      golden model's at the same call: the kernel's error plus what earlier layers passed on) and
      "local" (against the FP64 golden on the very q, k, v it saw: the kernel's error alone).
    """
    golden_model = copy.deepcopy(model).to(torch.float64).eval()
    gold_inputs = {k: (t.to(torch.float64) if torch.is_tensor(t) and t.is_floating_point() else t)
                   for k, t in inputs.items()} if isinstance(inputs, dict) else inputs
    with emulate(policy="fp64", algo="baseline", threads=threads, record=True) as gold:
        gold_logits = _logits(_run(golden_model, gold_inputs))
    report = []
    for v in variants:
        policy, algo = v.get("policy", "kernel-bf16"), v.get("algo", "flash2")
        with emulate(policy=policy, algo=algo, block=v.get("block", block), threads=threads,
                     record=True) as run:
            logits = _logits(_run(model, inputs))
        if run.calls != gold.calls:
            raise RuntimeError(f"compare: {_variant_name(v)} made {run.calls} attention calls, "
                               f"the golden model {gold.calls}")
        layers = []
        for (q, k, vv, causal, scale, out), gold_rec in zip(run.records, gold.records):
            local = _golden(q, k, vv, causal=causal, scale=scale, policy=policy, threads=threads)
            layers.append({"model": _deviation(out, gold_rec[5], policy=policy),
                           "local": _deviation(out, local, policy=policy)})
        fmt = _FORMAT_OF_DTYPE.get(logits.dtype, "fp64")
        report.append({"name": _variant_name(v),
                       "logits": _deviation(logits.to(torch.float64).numpy(),
                                            gold_logits.numpy(), format=fmt),
                       "layers": layers})
    return report


def format_report(report, metric="max_abs"):
    """compare()'s report as a plain-text table: one row per variant, ``metric`` of the logits
    and of each layer's attention output (model / local)."""
    lines = []
    for r in report:
        cells = [f"{r['name']}: logits {r['logits'][metric]:.3e}"]
        for i, layer in enumerate(r["layers"]):
            cells.append(f"L{i} {layer['model'][metric]:.3e}/{layer['local'][metric]:.3e}")
        lines.append(" | ".join(cells))
    return "\n".join(lines)
