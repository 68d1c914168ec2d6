"""The rest of the package's surface: errors carry the CLI's messages, shapes, listings, match's
ranking against `attndev match --json`, PyTorch tensors in and out."""

import json

import numpy as np
import pytest

import attndev
from conftest import assert_bit_identical, read_safetensors, run_cli


def qkv(n=64, d=32, shape=None, seed=0):
    rng = np.random.default_rng(seed)
    shape = shape or (n, d)
    return tuple(rng.standard_normal(shape) for _ in range(3))


def cli_error(cli, *args):
    """The CLI's message for a usage error, after its `attndev: error: --flag: ` prefix."""
    r = run_cli(cli, *args, check=False)
    assert r.returncode == 2, r
    line = r.stderr.strip().splitlines()[-1]
    return line.split(": ", 3)[-1]


@pytest.mark.parametrize("flag,keyword,value", [
    ("--policy", "policy", "kernel-bf61"),
    ("--policy", "policy", '{"base": "kernel-bf16", "probs": "fp32"}'),
    ("--policy", "policy", '{"base": "kernel-bf16", "prob": "fp33"}'),
    ("--algo", "algo", "flash3"),
])
def test_errors_carry_the_cli_message(cli, flag, keyword, value):
    q, k, v = qkv()
    expected = cli_error(cli, "point", flag, value, "--n", 64, "--d", 32)
    with pytest.raises(attndev.Error) as e:
        attndev.attention(q, k, v, **{keyword: value})
    assert str(e.value) == f"{keyword}: {expected}"


def test_bad_policy_names_the_nearest_preset():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r'policy: .*"kernel-bf61".*did you mean "kernel-bf16"'):
        attndev.attention(q, k, v, policy="kernel-bf61")


def test_argument_errors():
    q, k, v = qkv()
    with pytest.raises(attndev.Error, match=r"block\[1\] \(Bc\): 0 is out of range"):
        attndev.attention(q, k, v, block=(64, 0))
    with pytest.raises(attndev.Error, match="scale_on: unknown placement"):
        attndev.attention(q, k, v, scale_on="keys")
    with pytest.raises(attndev.Error, match="shape"):
        attndev.attention(q.reshape(-1), k, v)
    with pytest.raises(attndev.Error):  # the emulator's own check: d differs between q and k
        attndev.attention(q, k[:, :16], v)
    with pytest.raises(attndev.Error, match="format: unknown format"):
        attndev.deviation(q, q, format="bf61")


def test_failed_variant_is_a_runtime_error():
    q, k, v = qkv(d=64)
    with pytest.raises(RuntimeError, match="quantizes Q, K, V to scaled e4m3 itself"):
        attndev.attention(q, k, v, algo="flash3-fp8", policy="fp8-e4m3")


def test_shapes_agree():
    """(N, d), (H, N, d) and (B, H, N, d) of the same values give the same values."""
    q, k, v = qkv(shape=(2, 3, 40, 16))
    full = attndev.attention(q, k, v, block=(16, 16), causal=True)
    assert full.shape == (2, 3, 40, 16) and full.dtype == np.float64
    head = attndev.attention(q[1, 2], k[1, 2], v[1, 2], block=(16, 16), causal=True)
    assert head.shape == (40, 16)
    assert_bit_identical(head, full[1, 2], "one head as (N, d)")
    heads = attndev.attention(q[0], k[0], v[0], block=(16, 16), causal=True)
    assert heads.shape == (3, 40, 16)
    assert_bit_identical(heads, full[0], "one batch as (H, N, d)")
    # float32 and non-contiguous inputs are converted, not refused.
    f32 = attndev.attention(q[0, 0].astype(np.float32).T.copy().T, k[0, 0].astype(np.float32),
                            v[0, 0].astype(np.float32), block=(16, 16), causal=True)
    ref = attndev.attention(q[0, 0].astype(np.float32).astype(np.float64),
                            k[0, 0].astype(np.float32).astype(np.float64),
                            v[0, 0].astype(np.float32).astype(np.float64), block=(16, 16),
                            causal=True)
    assert_bit_identical(f32, ref, "float32 inputs")


def test_listings_match_the_cli(cli):
    listed = json.loads(run_cli(cli, "list", "presets", "--json").stdout)
    listed = listed.get("presets", listed) if isinstance(listed, dict) else listed
    assert [p["name"] for p in attndev.presets()] == [p["name"] for p in listed]
    assert [p["stages"] for p in attndev.presets()] == [p["stages"] for p in listed]
    algos = json.loads(run_cli(cli, "list", "algorithms", "--json").stdout)
    algos = algos.get("algorithms", algos) if isinstance(algos, dict) else algos
    assert [a["name"] for a in attndev.algorithms()] == [a["name"] for a in algos]


def test_match_ranks_as_the_cli(cli, tmp_path):
    """An output of flash2 kernel-bf16 Bc=32: the package's ranking is the CLI's, candidate by
    candidate, and both name the kernel that produced it first."""
    out = tmp_path / "dump"
    run_cli(cli, "point", "--algo", "flash2", "--policy", "kernel-bf16", "--n", 96, "--d", 32,
            "--br", 64, "--bc", 32, "--seed", 5, "--dump", out)
    inputs = read_safetensors(out / "inputs-bf16.safetensors")
    o = read_safetensors(out / "flash2-kernel-bf16.safetensors")["o"]
    ranked = json.loads(run_cli(cli, "match", out / "flash2-kernel-bf16.safetensors", "--inputs",
                                out / "inputs-bf16.safetensors", "--bc", 16, "--bc", 32, "--bc",
                                64, "--json").stdout)
    mine = attndev.match(o, inputs["q"], inputs["k"], inputs["v"], block_c=(16, 32, 64))
    assert [c["candidate"] for c in mine["candidates"]] == \
        [c["candidate"] for c in ranked["candidates"]]
    for a, b in zip(mine["candidates"], ranked["candidates"]):
        assert a.get("identical_fraction") == b.get("identical_fraction"), a["candidate"]
    assert mine["verdict"] == ranked["verdict"]
    best = mine["candidates"][0]
    assert (best["algorithm"], best["policy_label"], best["block_c"]) == \
        ("flash2", "kernel-bf16", 32)
    assert best["identical_fraction"] == 1.0


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    q, k, v = qkv(shape=(1, 2, 48, 16))
    tq, tk, tv = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    o = attndev.attention(tq, tk, tv, block=(16, 16))
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float64 and o.shape == tq.shape
    ref = attndev.attention(*(x.to(torch.float64).numpy() for x in (tq, tk, tv)), block=(16, 16))
    assert_bit_identical(o.numpy(), ref, "bf16 tensors")
    # Values come back exactly representable in the output format: casting to bf16 loses nothing.
    assert torch.equal(o.to(torch.bfloat16).to(torch.float64), o)


def test_timing_splits_the_call():
    """timing=True: the same O, with the kernel's seconds inside the whole call's."""
    q, k, v = qkv()
    o, t = attndev.attention(q, k, v, timing=True)
    assert_bit_identical(o, attndev.attention(q, k, v), "timing=True")
    assert 0 < t["kernel_s"] <= t["total_s"]
