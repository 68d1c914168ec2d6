"""Assertions for tests of attention kernels, in the manner of torch.testing.assert_close, for
pytest or any test runner (docs/python.md, "attndev.testing").

The rule is the one attndev's own checks and flash-attention's tests follow: a kernel's deviation
from a much more precise reference (here the FP64 golden) means something only next to the
deviation of a same-precision reference implementation, so the assertion is

    deviation(actual, golden) <= max_ratio * deviation(reference, golden) + floor

with the floor the output format's own rounding of the golden, measured in the same metric (the
deviation of round(golden, format) from golden: a result can do no better than be the golden
stored in the format, and FlashAttention-3's tests take their tolerance from the output dtype
the same way). No typed-in epsilon:

    import attndev.testing as at
    out = my_kernel(q, k, v)                                   # e.g. bf16 tensors
    at.assert_attention_close(out, q, k, v, policy="kernel-bf16", max_ratio=2.0)

On failure an AssertionError says which metric, both deviations, their ratio, the limit and the
worst element; on success the measurements come back as a dict.
"""

import numpy as np

from . import _args
from . import attention as _attention
from . import deviation as _deviation
from . import golden as _golden
from . import policy_formats as _policy_formats
from . import round as _round

__all__ = ["assert_deviation_within", "assert_attention_close"]

# Metrics an assertion can hold: those that grow with the error (cos_sim does not; max_rel is
# floored on its own terms, deviation()'s max_rel_floor).
_METRICS = ("max_abs", "mean_abs", "rmse", "rel_l2")


def _element(shape, flat):
    """'flat 5509 (b0 h0 r86 c5)' for a (B, H, N, d) shape; the index alone otherwise."""
    text = f"flat index {flat}"
    if len(shape) >= 2 and 0 <= flat < int(np.prod(shape)):
        idx = np.unravel_index(flat, shape)
        names = ("b", "h", "r", "c")[4 - len(shape):] if len(shape) <= 4 else ()
        if names:
            text += " (" + " ".join(f"{n}{i}" for n, i in zip(names, idx)) + ")"
    return text


def _flat(x, name):
    from . import _as_float64
    return _as_float64(x, name)


def assert_deviation_within(actual, golden, reference, *, max_ratio=2.0, metric="max_abs",
                            format="fp64", msg=None):
    """Asserts deviation(actual, golden)[metric] <= max_ratio * deviation(reference,
    golden)[metric] + floor. ``actual``: the output under test; ``golden``: a more precise result
    on the same inputs (attndev.golden); ``reference``: a same-precision implementation's output
    (e.g. attndev.attention(..., algo="baseline")). ``format``: the output format; the floor is
    the metric of round(golden, format) against golden (0 for fp64). A NaN or inf in ``actual``
    fails whatever the ratio. Returns {"metric", "actual", "reference", "ratio", "limit",
    "floor"}."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    metric = _args.text("metric", metric)
    if metric not in _METRICS:
        from . import _core
        raise _args.error(f"metric: {metric!r} cannot be held to a ratio"
                          f"{_core.did_you_mean(metric, list(_METRICS))}; valid: "
                          f"{', '.join(_METRICS)}")
    max_ratio = _args.real("max_ratio", max_ratio)
    if max_ratio <= 0:
        raise _args.error(f"max_ratio: expected a number > 0, got {max_ratio}")
    a, g, r = _flat(actual, "actual"), _flat(golden, "golden"), _flat(reference, "reference")
    if a.shape != g.shape or r.shape != g.shape:
        raise _args.error(f"shapes differ: actual {a.shape}, golden {g.shape}, reference "
                          f"{r.shape}")
    dev = _deviation(a, g, format=format)
    ref = _deviation(r, g, format=format)
    floor = _deviation(_round(g, format), g, format=format)[metric]
    limit = max_ratio * ref[metric] + floor
    ratio = dev[metric] / ref[metric] if ref[metric] > 0 else (
        1.0 if dev[metric] == 0 else float("inf"))
    result = {"metric": metric, "actual": dev[metric], "reference": ref[metric], "ratio": ratio,
              "limit": limit, "floor": floor}
    broken = dev["nan_count"] or dev["inf_count"]
    if broken or not dev[metric] <= limit:
        w = int(dev["worst_index"])
        flat_a, flat_g, flat_r = a.reshape(-1), g.reshape(-1), r.reshape(-1)
        lines = [
            (f"{dev['nan_count']} NaN and {dev['inf_count']} inf in the output" if broken else
             f"{metric} deviation from the golden {dev[metric]:.4g} is {ratio:.3g}x the "
             f"reference's {ref[metric]:.4g}: above the limit {limit:.4g} = {max_ratio:g} x "
             f"{ref[metric]:.4g} + floor {floor:.3g} (the golden rounded to {format})"),
            f"worst element: {_element(a.shape, w)}: actual {float(flat_a[w])!r}, golden "
            f"{float(flat_g[w])!r}, reference {float(flat_r[w])!r}" if 0 <= w < flat_a.size else "",
        ]
        text = "\n".join(line for line in lines if line)
        raise AssertionError(f"{msg}\n{text}" if msg else text)
    return result


def assert_attention_close(actual, q, k, v, *, policy="kernel-bf16", reference="baseline",
                           reference_policy=None, max_ratio=2.0, metric="max_abs", causal=False,
                           mask=None, scale=None, scale_on="scores", block=(64, 64), threads=0,
                           msg=None):
    """Asserts that ``actual``, an attention output some implementation computed from q, k, v,
    deviates from the FP64 golden at most ``max_ratio`` times as much as attndev's emulation of
    ``reference`` (an algorithm: "baseline", "flash2", ...) under ``reference_policy`` (default
    ``policy``), plus the output format's floor. The golden and the reference see q, k, v rounded
    to the policy's input format, as the implementation under test should (pass values it
    stored in that format). ``causal``, ``mask`` and ``scale`` are the call's (PyTorch's
    semantics for mask). Returns assert_deviation_within's dict."""
    __tracebackhide__ = True
    ref_policy = policy if reference_policy is None else reference_policy
    g = _golden(q, k, v, causal=causal, scale=scale, scale_on=scale_on, policy=policy,
                threads=threads, mask=mask)
    r = _attention(q, k, v, algo=reference, policy=ref_policy, block=block, causal=causal,
                   scale=scale, scale_on=scale_on, threads=threads, mask=mask)
    fmt = _policy_formats(policy)["output"]
    return assert_deviation_within(actual, g, r, max_ratio=max_ratio, metric=metric, format=fmt,
                                   msg=msg)
