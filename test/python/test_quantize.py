"""attndev.quantize against independent numpy implementations of each published rule, bit for bit,
on held-back arrays (fixed seeds, outliers, all-zero blocks, amax just below powers of two).

The references are written here from the rules as published (OCP MX v1.0 Sec. 6.3, NVIDIA's
round-up scale, torchao's nvfp4_quantize, SageAttention's Triton quantizer), with numpy's own
rounding (np.round is half-to-even) and np.frexp for exact exponents: nothing comes from attndev.
"""

import numpy as np
import pytest

import attndev

F32 = np.float32


def round_minifloat(y, mbits, emin, maxval, away=False):
    """y rounded to a binary float with `mbits` fraction bits and smallest normal 2^emin
    (subnormals below), nearest-even (or ties away), saturating at maxval."""
    a = np.abs(y)
    _, e = np.frexp(np.where(a > 0, a, 1.0))
    e = np.maximum(e - 1, emin)
    quantum = np.ldexp(1.0, e - mbits)
    units = a / quantum
    r = (np.floor(units + 0.5) if away else np.round(units)) * quantum
    return np.copysign(np.minimum(r, maxval), y)


def e4m3(y, away=False):
    return round_minifloat(y, 3, -6, 448.0, away)


def e2m1(y):
    return round_minifloat(y, 1, 0, 6.0)


def floor_log2(a):
    _, e = np.frexp(a)
    return e - 1


def ceil_log2(a):
    m, e = np.frexp(a)
    return np.where(m == 0.5, e - 1, e)


def blocks(x, n):
    return x.reshape(x.shape[:-1] + (x.shape[-1] // n, n))


def ref_mx(x, emax, elem, n=32):
    """OCP MX v1.0: shared exponent floor(log2 amax) - emax, clamped to e8m0's [-127, 127]."""
    b = blocks(x, n)
    amax = np.max(np.abs(b), axis=-1, keepdims=True)
    exp = np.where(amax > 0, floor_log2(np.where(amax > 0, amax, 1.0)) - emax, -127)
    scale = np.ldexp(1.0, np.maximum(exp, -127))
    return (elem(b / scale) * scale).reshape(x.shape), scale[..., 0]


def ref_rceil(x, n=32):
    """NVIDIA: scale 2^ceil(log2(fp32(amax) / 448)), the division in fp32."""
    b = blocks(x, n)
    amax = np.max(np.abs(b), axis=-1, keepdims=True)
    d = (amax.astype(F32) / F32(448)).astype(np.float64)
    exp = np.where(d > 0, ceil_log2(np.where(d > 0, d, 1.0)), -127)
    scale = np.ldexp(1.0, np.maximum(exp, -127))
    return (e4m3(b / scale) * scale).reshape(x.shape), scale[..., 0]


def ref_nvfp4(x):
    """torchao's _nvfp4_quantize with a per-tensor scale, every operation in float32."""
    x32 = x.astype(F32)
    t = F32(np.max(np.abs(x32))) / F32(448.0 * 6.0)
    b = blocks(x32, 16)
    amax = np.max(np.abs(b), axis=-1, keepdims=True)
    scaled = np.clip((amax / F32(6.0)) / t, F32(2.0 ** -6), F32(448.0))
    s8 = e4m3(scaled.astype(np.float64)).astype(F32)
    total = t * s8
    y = np.clip(b / total, F32(-6.0), F32(6.0)).astype(np.float64)
    scale = s8.astype(np.float64) * np.float64(t)
    return (e2m1(y) * scale).reshape(x.shape), scale[..., 0]


def ref_sage_int8_blocks(x, rows):
    """SageAttention's Triton per-block INT8: scale fp32(amax) / 127, y = x / scale in fp32,
    y += 0.5 sign(y) in fp32, truncated."""
    m = x.reshape(-1, x.shape[-2], x.shape[-1]).astype(F32)
    out = np.empty(m.shape)
    scales = []
    for h in range(m.shape[0]):
        s_h = []
        for r0 in range(0, m.shape[1], rows):
            blk = m[h, r0:r0 + rows]
            s = F32(np.max(np.abs(blk))) / F32(127.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                y = blk / s if s > 0 else np.zeros_like(blk)
            y = (y + np.where(y >= 0, F32(0.5), F32(-0.5))).astype(F32)
            # + 0.0: an integer has no negative zero (trunc(-0.3) is -0.0 in floating point).
            out[h, r0:r0 + rows] = (np.trunc(y.astype(np.float64)) + 0.0) * np.float64(s)
            s_h.append(np.float64(s))
        scales.append(s_h)
    return out.reshape(x.shape), np.array(scales).reshape(x.shape[:-2] + (len(scales[0]),))


def held_back(shape, seed):
    """Normal values with 0.1% outliers of std 100, one all-zero block, and values a hair below
    powers of two (the amax rules' edge)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32).astype(np.float64)
    x += np.where(rng.random(shape) < 0.001, rng.standard_normal(shape) * 100, 0.0)
    x = x.astype(np.float32).astype(np.float64)
    flat = x.reshape(-1, shape[-1])
    flat[0, :32] = 0.0
    flat[1, 0] = np.nextafter(np.float32(4.0), np.float32(0))
    flat[2, 3] = np.nextafter(np.float32(448.0 * 3 / 128), np.float32(0))
    return x


CASES = [
    ("mxfp8-e4m3", lambda x: ref_mx(x, 8, e4m3)),
    ("mxfp8-e4m3-rna", lambda x: ref_mx(x, 8, lambda y: e4m3(y, away=True))),
    ("mxfp8-e4m3-rceil", ref_rceil),
    ("mxfp4", lambda x: ref_mx(x, 2, e2m1)),
    ("mxfp6-e2m3", lambda x: ref_mx(x, 2, lambda y: round_minifloat(y, 3, 0, 7.5))),
    ("mxfp6-e3m2", lambda x: ref_mx(x, 4, lambda y: round_minifloat(y, 2, -2, 28.0))),
    ("nvfp4", ref_nvfp4),
    ("int8-per-block-128", lambda x: ref_sage_int8_blocks(x, 128)),
]


@pytest.mark.parametrize("scheme,reference", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("shape,seed", [((300, 64), 1), ((2, 3, 130, 128), 2)])
def test_quantize_equals_an_independent_implementation(scheme, reference, shape, seed):
    x = held_back(shape, seed)
    deq, scales = attndev.quantize(x, scheme)
    want, want_scales = reference(x)
    assert deq.shape == x.shape
    assert scales.shape == want_scales.shape
    assert np.array_equal(scales, want_scales), scheme
    bad = np.flatnonzero(deq.view(np.uint64) != want.view(np.uint64))
    assert bad.size == 0, f"{scheme}: {bad.size} elements differ, first at {bad[:5]}: " \
                          f"x {x.flat[bad[:5]]} got {deq.flat[bad[:5]]} want {want.flat[bad[:5]]}"


def test_all_zero_blocks_give_zeros_and_bad_input_is_named():
    deq, scales = attndev.quantize(np.zeros((4, 64)), "mxfp8-e4m3")
    assert not deq.any() and scales.shape == (4, 2)
    with pytest.raises(attndev.Error, match="cannot tile d = 48"):
        attndev.quantize(np.ones((4, 48)), "mxfp8-e4m3")
    with pytest.raises(attndev.Error, match='did you mean "mxfp8-e4m3"'):
        attndev.quantize(np.ones((4, 64)), "mxfp8-e4m")
    names = {s["name"] for s in attndev.quant_schemes()}
    assert {"mxfp8-e4m3", "mxfp8-e4m3-rna", "mxfp8-e4m3-rceil", "mxfp4", "nvfp4",
            "int8-per-block-128", "int8-per-thread-q"} <= names


def test_recipes_run_through_attention():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((128, 64)) for _ in range(3))
    g = attndev.golden(q, k, v, policy="kernel-fp16")
    for algo in ("sage2-8b", "mxfp8", "fa3-fp8"):
        o = attndev.attention(q, k, v, algo=algo, policy="kernel-fp16")
        dev = attndev.deviation(o, g, policy="kernel-fp16")
        assert 0 < dev["rel_l1"] < 0.1, algo
