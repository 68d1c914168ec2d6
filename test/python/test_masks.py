"""Masks in the package (attention's and golden's mask=): PyTorch's attn_mask semantics, padded
batches equal to each sequence run alone wherever the emulator promises it (docs/python.md,
"Masks"), shapes and errors. The PyTorch side (emulate with padded batches) is in test_torch.py."""

import numpy as np
import pytest

import attndev
from conftest import assert_bit_identical

EXACT = [("baseline", "kernel-bf16"), ("flash1", "kernel-bf16"), ("flash2", "kernel-bf16"),
         ("flash2", "kernel-fp16"), ("baseline", "framework-bf16"), ("flash1", "framework-bf16"),
         ("flash2", "framework-bf16"), ("baseline", "torch-math-bf16"),
         ("flash2", "torch-math-bf16"), ("flash2", "fp32")]


def padded_batch(lengths, n_pad, d=16, heads=2, seed=4):
    """(B, H, n_pad, d) inputs whose padding rows are random values, and the key-padding mask
    (B, 1, 1, n_pad) that keeps each sequence's own keys."""
    q, k, v = attndev.inputs((len(lengths), heads, n_pad, d), seed=seed)
    keep = np.arange(n_pad)[None, :] < np.array(lengths)[:, None]  # (B, S)
    return q, k, v, keep[:, None, None, :]


@pytest.mark.parametrize("algo,policy", EXACT)
@pytest.mark.parametrize("causal", [False, True])
def test_padded_batch_equals_each_sequence_alone(algo, policy, causal):
    lengths, n_pad = [45, 13, 70], 77
    q, k, v, keep = padded_batch(lengths, n_pad)
    mask = keep
    if causal:  # Hugging Face's 4-D mask: the causal triangle (upper left) and the padding
        mask = keep & np.tril(np.ones((n_pad, n_pad), dtype=bool))[None, None]
    kw = dict(algo=algo, policy=policy, block=(16, 32))
    o = attndev.attention(q, k, v, mask=mask, **kw)
    g = attndev.golden(q, k, v, mask=mask, policy=policy)
    for b, n in enumerate(lengths):
        alone = attndev.attention(q[b, :, :n], k[b, :, :n], v[b, :, :n], causal=causal, **kw)
        assert_bit_identical(o[b, :, :n], alone, f"sequence {b} (length {n})")
        gold = attndev.golden(q[b, :, :n], k[b, :, :n], v[b, :, :n], causal=causal, policy=policy)
        assert_bit_identical(g[b, :, :n], gold, f"golden of sequence {b}")


def test_boolean_and_additive_masks_agree():
    q, k, v, keep = padded_batch([20, 31], 31)
    additive = np.where(keep, 0.0, -np.inf)
    a = attndev.attention(q, k, v, mask=keep)
    b = attndev.attention(q, k, v, mask=additive)
    c = attndev.attention(q, k, v, mask=additive.astype(np.float32))
    assert_bit_identical(a, b, "bool vs float")
    assert_bit_identical(a, c, "float32 mask")


def test_mask_broadcasts_as_pytorch():
    q, k, v = attndev.inputs((2, 3, 24, 8), seed=2)
    rng = np.random.default_rng(3)
    m2 = rng.random((24, 24)) > 0.3  # (L, S): every batch and head
    full = np.broadcast_to(m2, (2, 3, 24, 24))
    assert_bit_identical(attndev.attention(q, k, v, mask=m2),
                         attndev.attention(q, k, v, mask=np.ascontiguousarray(full)), "(L, S)")
    row = rng.random(24) > 0.5  # (S,): one key mask for every query
    assert_bit_identical(attndev.attention(q, k, v, mask=row),
                         attndev.attention(q, k, v, mask=np.broadcast_to(row, (24, 24)).copy()),
                         "(S,)")


def test_bias_changes_the_result_and_reaches_the_golden():
    q, k, v = attndev.inputs((32, 8), seed=6)
    bias = np.random.default_rng(7).standard_normal((32, 32))
    o = attndev.attention(q, k, v, policy="fp64", mask=bias)
    g = attndev.golden(q, k, v, mask=bias)
    # softmax(S * scale + bias) V in numpy (float64): the golden and fp64 flash2 agree with it.
    z = q @ k.T / np.sqrt(8) + bias
    p = np.exp(z - z.max(axis=1, keepdims=True))
    ref = (p / p.sum(axis=1, keepdims=True)) @ v
    assert np.max(np.abs(g - ref)) < 1e-13 and np.max(np.abs(o - ref)) < 1e-13
    assert np.max(np.abs(attndev.golden(q, k, v) - g)) > 1e-3


def test_fully_masked_rows_are_zero():
    q, k, v = attndev.inputs((6, 4), seed=1)
    mask = np.ones((6, 6), dtype=bool)
    mask[2] = False
    o = attndev.attention(q, k, v, mask=mask, policy="kernel-bf16")
    assert np.all(o[2] == 0) and np.all(np.isfinite(o))


@pytest.mark.parametrize("mask,expected", [
    (np.ones((3, 5, 9), dtype=bool), r"mask: shape \(3, 5, 9\) does not broadcast to "
                                     r"\(B, H, N_q, N_kv\) = \(1, 2, 5, 7\)"),
    (np.ones((5, 9), dtype=bool), r"does not broadcast"),
    (np.ones((5, 7), dtype=np.int32), r"mask: dtype int32: expected bool"),
    (np.full((5, 7), np.nan), r"mask: NaN at flat index 0 \(query 0, key 0\)"),
    (np.full((5, 7), np.inf), r"mask: \+inf at flat index 0"),
])
def test_bad_masks(mask, expected):
    q, k, v = attndev.inputs((2, 5, 4), seed=1, seq_kv=7)
    with pytest.raises(attndev.Error, match=expected):
        attndev.attention(q, k, v, mask=mask)


def test_vector_form_depends_on_the_padded_length():
    """PyTorch's CPU flash kernel (torch-cpu-flash-*) groups a block's keys in vector lanes from
    the block's full width, padding included, and splits P V into gemm pieces by it: a padded
    batch is close to, not bit-identical with, the sequences alone (docs/python.md measures how
    close). The difference is a reordering of sums, far below bf16's resolution of the output."""
    lengths, n_pad = [45, 70], 77
    q, k, v, keep = padded_batch(lengths, n_pad, seed=8)
    kw = dict(policy="torch-cpu-flash-bf16", block=(32, 64))
    o = attndev.attention(q, k, v, mask=keep, **kw)
    differ = 0
    for b, n in enumerate(lengths):
        alone = attndev.attention(q[b, :, :n], k[b, :, :n], v[b, :, :n], **kw)
        diff = np.abs(o[b, :, :n] - alone)
        differ += int(np.count_nonzero(diff))
        assert np.max(diff) <= 2.0 ** -7 * np.max(np.abs(alone))  # one bf16 ulp at the scale
    assert differ > 0  # this kernel's order does depend on the padded length
