"""attndev.round, attndev.inputs and the safetensors functions: each checked against the CLI (its
format list, its drawn inputs in `point --dump`) or an independent reader/rounder."""

import json

import numpy as np
import pytest

import attndev
from conftest import assert_bit_identical, read_safetensors, run_cli


def test_formats_are_the_clis(cli):
    listed = json.loads(run_cli(cli, "list", "formats", "--json").stdout)
    listed = listed.get("formats", listed) if isinstance(listed, dict) else listed
    names = [f["name"] if isinstance(f, dict) else f for f in listed]
    assert attndev.formats() == names


def test_round_every_format_is_idempotent_and_within_half_an_ulp():
    """For every format the CLI lists: rounding twice changes nothing, a signed format keeps the
    sign, and rounding is monotonic (a sorted input stays sorted): what a round-to-nearest must do, without
    assuming any one format's encoding."""
    rng = np.random.default_rng(5)
    x = np.sort(np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-6, 6, 2000),
                                [0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -1e-30]]))
    for fmt in attndev.formats():
        r = attndev.round(x, fmt)
        assert r.shape == x.shape and r.dtype == np.float64, fmt
        finite = np.isfinite(r)
        assert_bit_identical(attndev.round(r, fmt)[finite], r[finite], f"{fmt} twice")
        assert np.all(np.diff(r[finite]) >= 0), f"{fmt}: not monotonic"
        if attndev.round([-1.0], fmt)[0] < 0:  # a signed format (scale formats may be unsigned)
            assert np.all((r[finite] == 0) | (np.sign(r[finite]) == np.sign(x[finite]))), fmt


def test_round_matches_numpys_ieee_casts():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 50, 7)) * 100
    assert_bit_identical(attndev.round(x, "fp32"), x.astype(np.float32).astype(np.float64), "fp32")
    assert_bit_identical(attndev.round(x, "fp16"), x.astype(np.float16).astype(np.float64), "fp16")
    assert_bit_identical(attndev.round(x, "fp64"), x, "fp64")
    assert attndev.round(x, "bf16").shape == (3, 50, 7)


def test_round_bf16_is_a_bfloat16_cast():
    torch = pytest.importorskip("torch")
    x = torch.randn(1000, dtype=torch.float64) * 1e3
    r = attndev.round(x, "bf16")
    assert isinstance(r, torch.Tensor) and r.dtype == torch.float64
    assert torch.equal(r, x.to(torch.bfloat16).to(torch.float64))


def test_round_refuses_unknown_format():
    with pytest.raises(attndev.Error, match=r'format: unknown format "bf61" \(did you mean "bf16"'):
        attndev.round([1.0], "bf61")


@pytest.mark.parametrize("policy,dist", [("kernel-bf16", "uniform(-2,3)"),
                                         ("kernel-fp16", "normal(0.5,2)"),
                                         ("fp32", "outlier(10,0.01)")])
def test_inputs_are_the_clis_draws(cli, tmp_path, policy, dist):
    """attndev.inputs at a point gives `attndev point`'s inputs bit for bit: rounded to the
    policy's input format directly, or raw (fp64) and rounded by attention(); the variant's O on
    them is the CLI's."""
    fmt = attndev.policy_formats(policy)["input"]
    out = tmp_path / "dump"
    run_cli(cli, "point", "--algo", "flash2", "--policy", policy, "--n", 33, "--n-kv", 20,
            "--d", 16, "--batch", 2, "--heads", 3, "--br", 16, "--bc", 8, "--dist", dist,
            "--seed", 7, "--dump", out)
    dumped = read_safetensors(out / f"inputs-{fmt}.safetensors")
    q, k, v = attndev.inputs((2, 3, 33, 16), dist, seed=7, format=fmt, seq_kv=20)
    assert q.shape == (2, 3, 33, 16) and k.shape == v.shape == (2, 3, 20, 16)
    for name, mine in (("q", q), ("k", k), ("v", v)):
        assert_bit_identical(mine, dumped[name], f"{name} rounded to {fmt}")
    raw = attndev.inputs((2, 3, 33, 16), dist, seed=7, seq_kv=20)
    for name, mine in zip("qkv", raw):
        assert_bit_identical(attndev.round(mine, fmt), dumped[name], f"raw {name} rounded")
    o = attndev.attention(*raw, algo="flash2", policy=policy, block=(16, 8))
    variant = read_safetensors(out / f"flash2-{policy}.safetensors")["o"]
    assert_bit_identical(o, variant, "O on the raw draws")


def test_inputs_shapes_and_errors():
    q, k, v = attndev.inputs((40, 8), seed=3)
    assert q.shape == k.shape == v.shape == (40, 8)
    h = attndev.inputs((2, 40, 8), seed=3)
    assert_bit_identical(h[0][0], q, "(H, N, d) head 0 is (N, d)")  # counter-based: same values
    assert not np.array_equal(q, k)  # one stream per tensor
    with pytest.raises(attndev.Error, match=r'distribution: .*"nromal"'):
        attndev.inputs((8, 4), "nromal")
    with pytest.raises(attndev.Error, match=r"shape: expected \(N, d\)"):
        attndev.inputs(8)
    with pytest.raises(attndev.Error, match=r"shape\[1\]: 0 is out of range"):
        attndev.inputs((8, 0))


def test_safetensors_round_trip(tmp_path):
    rng = np.random.default_rng(9)
    tensors = {"a": rng.standard_normal((3, 4)), "b": rng.standard_normal(5).astype(np.float32),
               "c": rng.standard_normal((2, 2, 2)).astype(np.float16)}
    path = tmp_path / "t.safetensors"
    attndev.write_safetensors(path, tensors, metadata={"who": "test"})
    back, meta = attndev.read_safetensors(path, metadata=True)
    assert meta == {"who": "test"}
    for name, t in tensors.items():
        assert_bit_identical(back[name], t.astype(np.float64), name)
    # The file is a standard one: the tests' own reader (written from the format) agrees.
    independent = read_safetensors(path)
    for name in tensors:
        assert_bit_identical(independent[name], back[name], f"{name} independent reader")
    # dtype= rounds once, round-to-nearest-even, as the CLI's writer does.
    attndev.write_safetensors(path, {"a": tensors["a"]}, dtype="BF16")
    assert_bit_identical(attndev.read_safetensors(path)["a"], attndev.round(tensors["a"], "bf16"),
                         "BF16")


def test_safetensors_reads_cli_dumps(cli, tmp_path):
    out = tmp_path / "dump"
    run_cli(cli, "point", "--n", 24, "--d", 8, "--dump", out)
    for f in out.iterdir():
        mine, theirs = attndev.read_safetensors(f), read_safetensors(f)
        assert sorted(mine) == sorted(theirs)
        for name in mine:
            assert_bit_identical(mine[name], theirs[name], f"{f.name}:{name}")


def test_safetensors_errors(tmp_path):
    with pytest.raises(attndev.Error, match="nothing.safetensors"):
        attndev.read_safetensors(tmp_path / "nothing.safetensors")
    with pytest.raises(attndev.Error, match=r'dtype: unknown key \'aa\' \(did you mean "a"\?\)'):
        attndev.write_safetensors(tmp_path / "x.safetensors", {"a": [1.0]}, dtype={"aa": "F32"})
    with pytest.raises(attndev.Error, match=r"has no safetensors float type here: give dtype="):
        attndev.write_safetensors(tmp_path / "x.safetensors", {"a": np.arange(3)})
    with pytest.raises(attndev.Error, match=r'"F8".*F64, F32, F16, BF16'):
        attndev.write_safetensors(tmp_path / "x.safetensors", {"a": [1.0]}, dtype="F8")


def test_bfloat16_tensor_written_as_bf16(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.randn(7, 3).to(torch.bfloat16)
    path = tmp_path / "bf.safetensors"
    attndev.write_safetensors(path, {"t": t})
    raw = path.read_bytes()
    assert b'"BF16"' in raw
    assert torch.equal(torch.from_numpy(attndev.read_safetensors(path)["t"]),
                       t.to(torch.float64))
