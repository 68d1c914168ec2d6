"""attndev.torch: a Hugging Face GPT-2 initialised at random (no download), 2 layers, small dims,
its attention routed through the emulator. Skipped when torch or transformers is absent."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import numpy as np  # noqa: E402

import attndev  # noqa: E402
import attndev.torch as at  # noqa: E402
from conftest import assert_bit_identical  # noqa: E402

LAYERS = 2


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=101, n_positions=64, n_embd=32, n_layer=LAYERS,
                                     n_head=2, bos_token_id=0, eos_token_id=0,
                                     attn_implementation="sdpa")
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 101, (1, 40), generator=torch.Generator().manual_seed(1))
    return model, ids


def logits(model, ids, **kw):
    with torch.no_grad():
        return model(input_ids=ids, **kw).logits


def test_emulate_routes_every_layer_and_restores(gpt2):
    model, ids = gpt2
    original = torch.nn.functional.scaled_dot_product_attention
    with at.emulate(policy="kernel-bf16", algo="flash2", record=True) as run:
        emulated = logits(model, ids)
    assert run.calls == LAYERS
    assert torch.nn.functional.scaled_dot_product_attention is original
    # Each call's output is the package's attention on what the call saw, causal (GPT-2's mask).
    call = run.records[0]
    assert call.causal and call.q.shape == (1, 2, 40, 16) and call.mask is None
    assert_bit_identical(call.out.numpy(),
                         attndev.attention(call.q, call.k, call.v, causal=True).numpy(), "layer 0")
    # bf16 attention inside an fp32 model: close to PyTorch's own, not identical.
    native = logits(model, ids)
    diff = (emulated - native).abs().max().item()
    assert 0 < diff < 0.05 * native.abs().max().item()


def test_fp64_emulation_is_pytorchs_float64_model(gpt2):
    """The golden policy in a float64 copy of the model agrees with PyTorch's float64 SDPA to
    round-off: the masks and the scale are PyTorch's."""
    model, ids = gpt2
    double = __import__("copy").deepcopy(model).double()
    with at.emulate(policy="fp64", algo="baseline"):
        emulated = logits(double, ids)
    native = logits(double, ids)
    assert torch.allclose(emulated, native, rtol=0, atol=1e-12)


def test_compare_reports_layers_and_logits(gpt2):
    model, ids = gpt2
    report = at.compare(model, {"input_ids": ids},
                        variants=[{"algo": "flash2", "policy": "kernel-bf16"},
                                  {"algo": "baseline", "policy": "fp32"},
                                  {"algo": "flash2", "policy": "fp32", "block": (16, 32)}])
    bf16, fp32, tiles = report
    # Labels name the tiles of a tiled algorithm (a baseline has none).
    assert [r["name"] for r in report] == ["flash2 kernel-bf16 64x64", "baseline fp32",
                                           "flash2 fp32 16x32"]
    assert len(bf16["layers"]) == LAYERS and len(fp32["layers"]) == LAYERS
    for r in report:
        assert r["logits"]["count"] == 40 * 101 and r["logits"]["nan_count"] == 0
    # bf16 attention deviates by orders of magnitude more than fp32 attention, in every layer
    # and in the logits; in layer 0 the model and local deviations coincide (same inputs).
    assert bf16["logits"]["max_abs"] > 100 * fp32["logits"]["max_abs"] > 0
    for b, f in zip(bf16["layers"], fp32["layers"]):
        assert b["local"]["max_abs"] > 100 * f["local"]["max_abs"]
    assert bf16["layers"][0]["model"]["max_abs"] == pytest.approx(
        bf16["layers"][0]["local"]["max_abs"], rel=0.5)
    assert "L1" in at.format_report(report)


def test_compare_refuses_unknown_keys(gpt2):
    model, ids = gpt2
    with pytest.raises(attndev.Error, match=r"variants\[0\]: unknown key 'blok' \(did you mean "
                                            r"\"block\"\?\); valid: algo, policy, block, name"):
        at.compare(model, {"input_ids": ids}, variants=[{"algo": "flash2", "blok": (16, 16)}])
    with pytest.raises(attndev.Error, match=r"block: expected \(Br, Bc\)"):
        at.compare(model, {"input_ids": ids}, variants=[{"algo": "flash2", "block": "16"}])
    with pytest.raises(attndev.Error, match=r"policy: unknown policy preset"):
        with at.emulate(policy="kernel-bf61"):
            pass


def test_unsupported_is_a_clear_error():
    q = torch.randn(1, 2, 8, 16)
    F = torch.nn.functional
    with at.emulate():
        with pytest.raises(NotImplementedError, match="forward pass only"):
            F.scaled_dot_product_attention(q.clone().requires_grad_(), q, q)
        with pytest.raises(NotImplementedError, match="dropout_p"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
        with pytest.raises(ValueError, match="attn_mask and is_causal=True both given"):
            F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(8, 8, dtype=torch.bool),
                                           is_causal=True)


def test_padded_batch_through_emulate_equals_each_sequence():
    """A right-padded batch with a key-padding mask, as a model passes it to SDPA, gives each
    sequence's own bits in its rows (kernel, framework and math presets)."""
    g = torch.Generator().manual_seed(5)
    lengths, n_pad = (37, 20, 64), 64
    q, k, v = (torch.randn(3, 2, n_pad, 16, generator=g) for _ in range(3))
    keep = torch.arange(n_pad)[None, :] < torch.tensor(lengths)[:, None]  # (B, S)
    causal = torch.ones(n_pad, n_pad, dtype=torch.bool).tril()
    F = torch.nn.functional
    for policy, algo in (("kernel-bf16", "flash2"), ("framework-bf16", "flash1"),
                         ("torch-math-bf16", "baseline")):
        for mask, is_causal in ((keep[:, None, None, :], False),
                                (keep[:, None, None, :] & causal, True)):
            with at.emulate(policy=policy, algo=algo, block=(16, 16)):
                padded = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                for b, n in enumerate(lengths):
                    alone = F.scaled_dot_product_attention(q[b:b + 1, :, :n], k[b:b + 1, :, :n],
                                                           v[b:b + 1, :, :n], is_causal=is_causal)
                    assert torch.equal(padded[b:b + 1, :, :n], alone), (policy, algo, b, is_causal)


def test_padded_gpt2_batch(gpt2):
    """GPT-2 with a padded batch (attention_mask) runs through emulate() and agrees with each
    sequence run alone: within the model's own float32 batch effects, far below bf16's."""
    model, ids = gpt2
    batch = torch.stack([ids[0], ids[0]])
    mask = torch.ones_like(batch)
    mask[1, 25:] = 0  # the second sequence is 25 tokens, right-padded
    with at.emulate(policy="kernel-bf16", algo="flash2", record=True) as run:
        padded = logits(model, batch, attention_mask=mask)
        alone = logits(model, batch[1:, :25])
    assert run.calls == 2 * LAYERS and run.records[0].mask is not None
    diff = (padded[1, :25] - alone[0]).abs().max().item()
    assert diff < 1e-3 * alone.abs().max().item(), diff
    assert torch.isfinite(padded).all()


def test_is_causal_with_l_not_s_is_pytorchs_upper_left_triangle():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, 12, 16, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, 2, 20, 16, generator=g, dtype=torch.float64) for _ in range(2))
    F = torch.nn.functional
    with at.emulate(policy="fp64", algo="flash2", block=(4, 8)):
        emulated = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    native = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(emulated, native, rtol=0, atol=1e-12)


def test_masks_as_pytorch_defines_them():
    """A boolean causal triangle, a float 0/-inf one and is_causal give one result; an all-True
    mask is no mask."""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 24, 16, generator=g) for _ in range(3))
    F = torch.nn.functional  # looked up inside the block: emulate() replaces the attribute
    tri = torch.ones(24, 24, dtype=torch.bool).tril()
    additive = torch.zeros(24, 24).masked_fill(~tri, float("-inf"))
    with at.emulate(policy="fp32", algo="flash2", block=(16, 16)) as run:
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b = F.scaled_dot_product_attention(q, k, v, attn_mask=tri)
        c = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
        everything = torch.ones(24, 24, dtype=torch.bool)
        d = F.scaled_dot_product_attention(q, k, v, attn_mask=everything)
        e = F.scaled_dot_product_attention(q, k, v)
    assert run.calls == 5
    assert torch.equal(a, b) and torch.equal(a, c) and torch.equal(d, e)
    assert not torch.equal(a, e)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # PyTorch's own
    assert torch.allclose(a, ref, atol=1e-5)
    assert np.isfinite(a.numpy()).all()
