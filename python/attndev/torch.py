"""A PyTorch model's attention through attndev's emulator (docs/python.md).

    with attndev.torch.emulate(policy="kernel-bf16", algo="flash2"):
        logits = model(input_ids).logits        # every SDPA call ran the emulated kernel

    report = attndev.torch.compare(model, {"input_ids": ids},
                                   variants=[{"algo": "flash2", "policy": "kernel-bf16"},
                                             {"algo": "baseline", "policy": "torch-math-bf16"}])

emulate() replaces torch.nn.functional.scaled_dot_product_attention while it is active: the
forward pass only, on CPU tensors, with PyTorch's mask semantics (is_causal is the upper-left
aligned lower triangle; a boolean attn_mask keeps True; a float one is added to the scaled
scores). Every mask runs: key padding, attention masks and additive biases go to the emulator as
masks (attention/mask.hpp), so padded batches run as they are. Dropout, gradients and non-CPU
tensors raise NotImplementedError saying so. Models reach SDPA through the module attribute
(Hugging Face transformers with attn_implementation="sdpa" does).
"""

import collections
import contextlib
import copy
import math

import torch

from . import _args
from . import attention as _attention
from . import deviation as _deviation
from . import golden as _golden
from . import policy_formats as _policy_formats

__all__ = ["emulate", "compare", "format_report", "Call"]

# One SDPA call as emulate(record=True) keeps it: q, k, v (H', N, d) float64 as the emulator saw
# them (batch and heads flattened), the causal flag, the scale, the mask (None or a boolean /
# float tensor broadcastable to (H', L, S)) and the output.
Call = collections.namedtuple("Call", "q k v causal scale out mask")


def _unsupported(what):
    return NotImplementedError(f"attndev.torch.emulate: {what}")


def _causal_mask(L, S):
    # PyTorch's is_causal: torch.ones(L, S).tril(diagonal=0), aligned at the upper left. The
    # emulator's own causal flag aligns at the lower right (FlashAttention >= 2.1): the same
    # triangle when L == S only, so other shapes go as this explicit mask.
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)


class _Emulation:
    """The state of one emulate() block: what runs and what each call saw."""

    def __init__(self, policy, algo, block, threads, record):
        self.policy, self.algo, self.block, self.threads = policy, algo, tuple(block), threads
        self.record = record
        self.calls = 0
        self.records = []  # a Call per call, when record is set

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
        if is_causal and attn_mask is not None:
            # PyTorch refuses the pair as well ("Explicit attn_mask should not be set when
            # is_causal=True").
            raise ValueError("attndev.torch.emulate: attn_mask and is_causal=True both given; "
                             "PyTorch's SDPA refuses the pair too")
        causal = bool(is_causal) and L == S
        mask = _causal_mask(L, S) if is_causal and L != S else attn_mask
        # (B, H, N, d) as the emulator takes it; other leading dims are flattened into heads (and
        # the mask with them). A mask keeps its broadcast dims: a (B, 1, 1, S) padding mask is
        # never expanded to (B, H, L, S).
        lead = query.shape[:-2]
        heads = tuple(lead) if len(lead) == 2 else (1, math.prod(lead))
        q = query.reshape(*heads, L, query.shape[-1])
        k = key.expand(*lead, S, key.shape[-1]).reshape(*heads, S, key.shape[-1])
        v = value.expand(*lead, S, value.shape[-1]).reshape(*heads, S, value.shape[-1])
        if mask is not None and len(lead) != 2 and mask.dim() > 2:
            mask = mask.expand(*lead, L, S).reshape(*heads, L, S)
        out = _attention(q, k, v, algo=self.algo, policy=self.policy, block=self.block,
                         causal=causal, scale=scale, threads=self.threads, mask=mask)
        self.calls += 1
        if self.record:
            self.records.append(Call(q, k, v, causal, scale, out, mask))
        # SDPA returns query's dtype: the emulator's values (exact in the policy's output format)
        # stored in it, as a kernel's output would be in the model.
        return out.to(query.dtype).reshape(*lead, L, value.shape[-1])


@contextlib.contextmanager
def emulate(policy="kernel-bf16", algo="flash2", block=(64, 64), threads=0, record=False):
    """Inside the block, torch.nn.functional.scaled_dot_product_attention runs attndev's emulated
    ``algo`` under ``policy`` with tiles ``block``. Yields an object whose ``calls`` counts the
    calls and, with ``record=True``, whose ``records`` holds a Call per call (q, k, v as float64
    (B, H, N, d) tensors, causal, scale, out, mask). Arguments are checked here, before the
    model runs."""
    _policy_formats(policy)  # an unknown preset or stage fails now, not inside the model
    state = _Emulation(policy, _args.text("algo", algo), _args.block(block),
                       _args.integer("threads", threads), _args.boolean("record", record))
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


_VARIANT_KEYS = ("algo", "policy", "block", "name")


def _variant_name(v, block):
    """The label of a variant in reports: its name, or algorithm, policy label and tiles (a
    baseline has none: it materializes S, its result does not depend on tiles)."""
    if v.get("name"):
        return v["name"]
    algo = v.get("algo", "flash2")
    label = f"{algo} {_policy_formats(v.get('policy', 'kernel-bf16'))['label']}"
    return label if algo.startswith("baseline") else f"{label} {block[0]}x{block[1]}"


def compare(model, inputs, variants, block=(64, 64), threads=0):
    """Runs ``model`` on ``inputs`` once per variant ({"algo", "policy", optional "block",
    "name"}; any other key is refused) with its attention emulated, and once as the FP64 golden
    model (a float64 copy whose attention is the golden: baseline with every stage in fp64).
    ``inputs`` is a tensor or a dict of keyword arguments. Returns one dict per variant:

      name (given, or algorithm, policy and tiles: "flash2 kernel-bf16 64x64"), logits: deviation
      of the logits from the golden model's (attndev.deviation, format of the logits' dtype),
      layers: per attention call in order, "model" (its output against the golden model's at the
      same call: the kernel's error plus what earlier layers passed on) and "local" (against the
      FP64 golden on the very q, k, v and mask it saw: the kernel's error alone).
    """
    for i, v in enumerate(variants):
        _args.known_keys(f"variants[{i}]", v, _VARIANT_KEYS)
    golden_model = copy.deepcopy(model).to(torch.float64).eval()
    gold_inputs = {k: (t.to(torch.float64) if torch.is_tensor(t) and t.is_floating_point() else t)
                   for k, t in inputs.items()} if isinstance(inputs, dict) else inputs
    with emulate(policy="fp64", algo="baseline", threads=threads, record=True) as gold:
        gold_logits = _logits(_run(golden_model, gold_inputs))
    report = []
    for v in variants:
        policy, algo = v.get("policy", "kernel-bf16"), v.get("algo", "flash2")
        tiles = _args.block(v.get("block", block), name="block")
        name = _variant_name(v, tiles)
        with emulate(policy=policy, algo=algo, block=tiles, threads=threads, record=True) as run:
            logits = _logits(_run(model, inputs))
        if run.calls != gold.calls:
            raise RuntimeError(f"compare: {name} made {run.calls} attention calls, the golden "
                               f"model {gold.calls}")
        layers = []
        for call, gold_call in zip(run.records, gold.records):
            local = _golden(call.q, call.k, call.v, causal=call.causal, scale=call.scale,
                            policy=policy, threads=threads, mask=call.mask)
            layers.append({"model": _deviation(call.out, gold_call.out, policy=policy),
                           "local": _deviation(call.out, local, policy=policy)})
        fmt = _FORMAT_OF_DTYPE.get(logits.dtype, "fp64")
        report.append({"name": name,
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
