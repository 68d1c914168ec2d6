"""attndev.mma against an independent implementation of the published tensor-core rule, written
here in Python integers and fractions from the papers (Khattak & Mikaitis 2025, arXiv 2512.07004;
MMA-Sim, arXiv 2511.10909), not from attndev's code: on random vectors drawn from seeds used
nowhere else. Then argument errors, and the flash2-tc twin through attndev.attention."""

import math
import zlib
from fractions import Fraction

import numpy as np
import pytest

import attndev

# (arch, kind) -> products per fused block, F, D in e8m13, E's lower limit (fp32 D, fp16 D);
# typed from the papers' parameter tables: A100/Ada fma 8 (tf32 4; Ada fp8 16), neab 1 (F = 24);
# H100/B200 fma 16 (tf32 8, fp8 32), neab 2 (F = 25); Hopper and Ada fp8: 13 fraction bits and an
# e8m13 D; B200 fp8 back to 25 bits; min_exp_limit -132 (A100, Ada) / -133 (H100, B200), fp16 D
# of fp16 inputs -20 / -21.
PROFILES = {
    ("sm80", "f16"): (8, 24, False, -132, -20),
    ("sm80", "tf32"): (4, 24, False, -132, -132),
    ("sm89", "f16"): (8, 24, False, -132, -20),
    ("sm89", "tf32"): (4, 24, False, -132, -132),
    ("sm89", "f8"): (16, 13, True, -132, -132),
    ("sm90", "f16"): (16, 25, False, -133, -21),
    ("sm90", "tf32"): (8, 25, False, -133, -133),
    ("sm90", "f8"): (32, 13, True, -133, -133),
    ("sm100", "f16"): (16, 25, False, -133, -21),
    ("sm100", "tf32"): (8, 25, False, -133, -133),
    ("sm100", "f8"): (32, 25, False, -133, -133),
}
KIND = {"fp16": "f16", "bf16": "f16", "tf32": "tf32", "e4m3": "f8", "e5m2": "f8"}
# exponent of the smallest normal, fraction bits, largest finite
FORMATS = {"fp16": (-14, 10, 65504.0), "bf16": (-126, 7, 3.3895313892515355e38),
           "tf32": (-126, 23, 3.4028234663852886e38), "e4m3": (-6, 3, 448.0),
           "e5m2": (-14, 2, 57344.0), "fp32": (-126, 23, 3.4028234663852886e38)}


def exponent(x, emin):
    """x = s 2^e with 1 <= |s| < 2, e clamped at emin (subnormals keep emin)."""
    _, e = math.frexp(x)
    return max(e - 1, emin)


def truncate_tf32(x):
    bits = np.array([x], dtype=np.float32).view(np.uint32)[0] & np.uint32(0xFFFFE000)
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def floor_log2(v):
    """floor(log2(v)) of a positive Fraction, exactly."""
    e = v.numerator.bit_length() - v.denominator.bit_length()
    while Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    return e


def round_d(v, e8m13, out):
    if v == 0:
        return 0.0
    sign = -1.0 if v < 0 else 1.0
    a = abs(v)
    ex = floor_log2(a)
    if out == "fp16":
        q = max(ex - 10, -24)
        r = round(a / Fraction(2) ** q)  # Fraction rounds half to even
        value = r * 2.0 ** q
        return sign * (math.inf if value > 65504.0 else value)
    keep = 13 if e8m13 else 23
    if ex >= 128:
        return sign * math.inf
    q = max(ex - keep, -126 - keep)
    return sign * math.trunc(a / Fraction(2) ** q) * 2.0 ** q


def fused_dot_add(a, b, c, fmt, block_f, out):
    """One fused dot-add of finite values, by the published rule."""
    _, f, e8m13, min_exp, min_exp_fp16 = block_f
    emin = FORMATS[fmt][0]
    terms = []
    e_max = min_exp_fp16 if out == "fp16" else min_exp
    for x, y in zip(a, b):
        if fmt == "tf32":
            x, y = truncate_tf32(x), truncate_tf32(y)
        if x != 0 and y != 0:
            e = exponent(x, emin) + exponent(y, emin)
            e_max = max(e_max, e)
            terms.append(Fraction(x) * Fraction(y))
    if c != 0:
        e_max = max(e_max, exponent(c, -126))  # C decomposed as an fp32 value
        terms.append(Fraction(c))
    unit = Fraction(2) ** (e_max - f)
    total = sum(int(t / unit) for t in terms)  # int() truncates toward zero
    return round_d(total * unit, e8m13, out)


def reference_mma(a, b, c, arch, fmt, out):
    params = PROFILES[(arch, KIND[fmt])]
    block = params[0]
    m, k = a.shape
    n = b.shape[1]
    d = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            acc = float(c[i, j])
            for k0 in range(0, k, block):
                acc = fused_dot_add(a[i, k0:k0 + block], b[k0:k0 + block, j], acc, fmt, params, out)
            d[i, j] = acc
    return d


def random_values(rng, fmt, shape, spread):
    """Values of fmt: random sign, exponent in [-spread, spread] (subnormals of the narrow types
    included where the range reaches them), random fraction bits; a few zeros."""
    emin, frac, largest = FORMATS[fmt]
    exps = rng.integers(-spread, spread + 1, size=shape)
    fracs = rng.integers(0, 2 ** frac, size=shape)
    x = (1 + fracs / 2.0 ** frac) * np.exp2(exps.astype(float))
    x = np.where(rng.random(shape) < 0.5, -x, x)
    x = np.where(rng.random(shape) < 0.05, 0.0, x)
    # Below the normal range: a subnormal of the format (the fraction on the fixed quantum).
    quantum = 2.0 ** (emin - frac)
    x = np.where(np.abs(x) < 2.0 ** emin, np.trunc(x / quantum) * quantum, x)
    return np.clip(x, -largest, largest)


CASES = [("sm80", "fp16", "fp32"), ("sm80", "bf16", "fp32"), ("sm80", "tf32", "fp32"),
         ("sm89", "e4m3", "fp32"), ("sm89", "e5m2", "fp16"), ("sm90", "bf16", "fp32"),
         ("sm90", "fp16", "fp16"), ("sm90", "tf32", "fp32"), ("sm90", "e4m3", "fp32"),
         ("sm90", "e5m2", "fp32"), ("sm100", "fp16", "fp32"), ("sm100", "e4m3", "fp32"),
         ("sm100", "tf32", "fp32")]


@pytest.mark.parametrize("arch,fmt,out", CASES)
def test_mma_equals_the_published_rule(arch, fmt, out):
    rng = np.random.default_rng(zlib.crc32(f"held-back {arch} {fmt} {out}".encode()))
    spread = {"e4m3": 5, "e5m2": 8}.get(fmt, 12)
    for trial in range(3):
        m, k, n = 3, int(rng.integers(1, 100)), 2
        a = random_values(rng, fmt, (m, k), spread)
        b = random_values(rng, fmt, (k, n), spread)
        c_fmt = "fp16" if out == "fp16" else "fp32"
        c = random_values(rng, c_fmt, (m, n), 6 if out == "fp16" else 20)
        got = attndev.mma(a, b, c, arch=arch, input=fmt, output=out)
        want = reference_mma(a, b, c, arch, fmt, out)
        assert got.shape == (m, n)
        assert np.array_equal(got, want), (trial, got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))


def test_mma_chains_instructions_and_keeps_the_probe():
    # SageAttention2's probe: Hopper fp8 with A = B = 0 returns C with its low 10 bits cleared.
    c = np.array([[np.float32(1.0000001192092896) * 1.75]], dtype=np.float32).astype(float)
    zeros_a, zeros_b = np.zeros((1, 32)), np.zeros((32, 1))
    d = attndev.mma(zeros_a, zeros_b, c, arch="sm90", input="e4m3")
    bits = np.array([c[0, 0]], dtype=np.float32).view(np.uint32)[0]
    assert np.array([d[0, 0]], dtype=np.float32).view(np.uint32)[0] == bits & ~np.uint32(0x3FF)
    assert attndev.mma(zeros_a, zeros_b, c, arch="sm100", input="e4m3")[0, 0] == c[0, 0]
    # k16 as two k8 halves on sm80, one block on sm90: 1 - 1, then eight products of 2^-30.
    a = np.zeros((1, 16))
    b = np.zeros((16, 1))
    a[0, 0] = b[0, 0] = a[0, 1] = 1.0
    b[1, 0] = -1.0
    a[0, 8:] = b[8:, 0] = 2.0 ** -15
    assert attndev.mma(a, b, np.zeros((1, 1)), arch="sm80", input="fp16")[0, 0] == 2.0 ** -27
    assert attndev.mma(a, b, np.zeros((1, 1)), arch="sm90", input="fp16")[0, 0] == 0.0
    assert attndev.mma(a, b, np.zeros((1, 1)), arch="sm90", input="fp16",
                       instruction="wgmma")[0, 0] == 0.0


@pytest.mark.parametrize("kwargs,message", [
    (dict(arch="sm80", input="e4m3"), "profiles that do: sm89, sm90, sm100"),
    (dict(arch="sm70"), "arch: unknown architecture \"sm70\""),
    (dict(arch="sm90", input="e4m3", instruction="tcgen05"), "sm90 has no tcgen05 instruction"),
    (dict(input="fp64"), "input: unknown input type \"fp64\""),
    (dict(arch="sm80", instruction="wgmma"), "sm80 has no wgmma instruction"),
    (dict(instruction="tcgen"), "instruction: unknown instruction"),
    (dict(output="bf16"), "output: must be \"fp32\" or \"fp16\""),
    (dict(input="bf16", output="fp16"), "an fp16 D exists for fp16 and fp8 inputs only"),
])
def test_mma_refuses_bad_choices(kwargs, message):
    a, b, c = np.ones((2, 16)), np.ones((16, 3)), np.zeros((2, 3))
    with pytest.raises(attndev.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        attndev.mma(a, b, c, **kwargs)


def test_mma_refuses_bad_shapes_and_values():
    with pytest.raises(attndev.Error, match=r"b: shape \(15, 3\) does not follow a's \(2, 16\)"):
        attndev.mma(np.ones((2, 16)), np.ones((15, 3)), np.zeros((2, 3)))
    with pytest.raises(attndev.Error, match=r"c: shape \(3, 2\), expected \(2, 3\)"):
        attndev.mma(np.ones((2, 16)), np.ones((16, 3)), np.zeros((3, 2)))
    with pytest.raises(attndev.Error, match="expected a matrix"):
        attndev.mma(np.ones(16), np.ones((16, 3)), np.zeros((1, 3)))
    a = np.ones((2, 16))
    a[1, 3] = 0.1
    with pytest.raises(attndev.Error, match=r"a\[1, 3\] = 0.100000 is not a bf16 value"):
        attndev.mma(a, np.ones((16, 3)), np.zeros((2, 3)), input="bf16")
    with pytest.raises(attndev.Error, match=r"c\[0, 0\] = 0.001000 is not an fp16 value"):
        attndev.mma(np.ones((2, 16)), np.ones((16, 3)), np.full((2, 3), 1e-3 + 1e-9),
                    input="fp16", output="fp16")


def test_the_flash2_tc_twin_through_attention():
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((96, 64)) for _ in range(3))
    tc80 = attndev.attention(q, k, v, algo="flash2-tc-twin", policy={"base": "kernel-bf16", "mma": "sm80"})
    tc90 = attndev.attention(q, k, v, algo="flash2-tc-twin", policy={"base": "kernel-bf16", "mma": "sm90"})
    assert tc80.shape == q.shape and not np.array_equal(tc80, tc90)
    g = attndev.golden(q, k, v, policy="kernel-bf16")
    assert attndev.deviation(tc90, g, policy="kernel-bf16")["max_abs"] < 0.05
    with pytest.raises(RuntimeError, match="head_dim 48 not instantiated in flash2-tc"):
        attndev.attention(q[:, :48], k[:, :48], v[:, :48], algo="flash2-tc-twin",
                          policy={"base": "kernel-bf16", "mma": "sm90"})
    with pytest.raises(attndev.Error, match="profiles that do: sm89, sm90, sm100"):
        attndev.attention(q, k, v, policy={"base": "fp8-e4m3", "mma": "sm80"})
