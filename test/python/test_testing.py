"""attndev.testing: assertions that pass for a kernel within the ratio, fail with a message that
says what and where, and refuse bad arguments."""

import numpy as np
import pytest

import attndev
import attndev.testing as at


def point(n=96, d=32, seed=0):
    return attndev.inputs((2, n, d), seed=seed)


def test_flash2_within_twice_the_baseline():
    q, k, v = point()
    out = attndev.attention(q, k, v, algo="flash2", policy="kernel-bf16")
    r = at.assert_attention_close(out, q, k, v, policy="kernel-bf16", max_ratio=2.0)
    assert r["metric"] == "max_abs" and 0 < r["actual"] <= r["limit"]
    assert r["ratio"] == pytest.approx(r["actual"] / r["reference"])


def test_a_broken_kernel_fails_with_a_clear_message():
    q, k, v = point()
    # A kernel that forgot the scale: attention of the unscaled scores.
    wrong = attndev.attention(q, k, v, policy="kernel-bf16", scale=1.0)
    with pytest.raises(AssertionError) as e:
        at.assert_attention_close(wrong, q, k, v, policy="kernel-bf16", msg="my kernel")
    text = str(e.value)
    assert text.startswith("my kernel\nmax_abs deviation from the golden ")
    assert "x the reference's" in text and "above the limit" in text
    assert "floor" in text and "(the golden rounded to bf16)" in text
    assert "worst element: flat index" in text and "(h" in text and "actual" in text


def test_nan_fails_whatever_the_ratio():
    q, k, v = point()
    out = attndev.attention(q, k, v, policy="kernel-bf16")
    out[0, 3, 1] = np.nan
    with pytest.raises(AssertionError, match="1 NaN and 0 inf in the output"):
        at.assert_attention_close(out, q, k, v, policy="kernel-bf16", max_ratio=1e9)


def test_deviation_within_with_own_references():
    q, k, v = point(seed=3)
    g = attndev.golden(q, k, v, policy="kernel-fp16")
    base = attndev.attention(q, k, v, algo="baseline", policy="torch-math-fp16")
    flash = attndev.attention(q, k, v, algo="flash2", policy="kernel-fp16")
    r = at.assert_deviation_within(flash, g, base, max_ratio=1.0, metric="rmse", format="fp16")
    assert r["ratio"] < 1.0  # FA-2's kernel policy deviates less than a framework's math path
    with pytest.raises(AssertionError, match="rmse deviation"):
        at.assert_deviation_within(base, g, flash, max_ratio=1.0, metric="rmse", format="fp16")


def test_the_golden_stored_in_the_format_passes_on_the_floor():
    """A result that is the golden rounded to the output format cannot do better: it passes
    against a reference that is the golden itself (deviation 0), on the floor alone."""
    q, k, v = point(seed=4)
    g = attndev.golden(q, k, v, policy="kernel-bf16")
    stored = attndev.round(g, "bf16")
    r = at.assert_deviation_within(stored, g, g, max_ratio=2.0, format="bf16")
    assert r["reference"] == 0 and r["actual"] == r["floor"] > 0
    with pytest.raises(AssertionError):  # without the floor (fp64) it would fail
        at.assert_deviation_within(stored, g, g, max_ratio=2.0, format="fp64")


def test_bad_arguments():
    q, k, v = point()
    out = attndev.attention(q, k, v)
    with pytest.raises(attndev.Error, match=r"metric: 'max_ab' cannot be held.*did you mean "
                                            r"\"max_abs\""):
        at.assert_attention_close(out, q, k, v, metric="max_ab")
    with pytest.raises(attndev.Error, match="max_ratio: expected a number > 0"):
        at.assert_attention_close(out, q, k, v, max_ratio=0)
    with pytest.raises(attndev.Error, match="shapes differ"):
        at.assert_deviation_within(out[0], out, out)
