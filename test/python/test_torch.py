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
    q, k, v, causal, scale, out = run.records[0]
    assert causal and q.shape == (2, 40, 16)
    assert_bit_identical(out.numpy(), attndev.attention(q, k, v, causal=True).numpy(), "layer 0")
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
                                  {"algo": "baseline", "policy": "fp32"}])
    bf16, fp32 = report
    assert [r["name"] for r in report] == ["flash2 kernel-bf16", "baseline fp32"]
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


def test_unsupported_is_a_clear_error(gpt2):
    model, ids = gpt2
    q = torch.randn(1, 2, 8, 16)
    with at.emulate():
        with pytest.raises(NotImplementedError, match="forward pass only"):
            torch.nn.functional.scaled_dot_product_attention(q.requires_grad_(), q, q)
        q = q.detach()
        with pytest.raises(NotImplementedError, match="dropout_p"):
            torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
        with pytest.raises(NotImplementedError, match="additive"):
            torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=torch.randn(8, 8))
        with pytest.raises(NotImplementedError, match="L=8 != S=4"):
            torch.nn.functional.scaled_dot_product_attention(q, q[:, :, :4], q[:, :, :4],
                                                             is_causal=True)
        # Padding (a sequence with masked positions) is a mask the emulator does not have.
        mask = torch.ones_like(ids)
        mask[0, :5] = 0
        with pytest.raises(NotImplementedError, match="neither all-visible nor the causal"):
            logits(model, ids, attention_mask=mask)


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
