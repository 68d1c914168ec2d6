"""attndev.attention and attndev.golden against `attndev point --dump`: the CLI draws the inputs,
rounds them and writes them with the golden and both outputs; the package, given the dumped inputs,
must give the same O and golden bit for bit. Every algorithm, a sample of presets, odd sizes
(tails), causal with N_q != N_kv (fully masked rows), B and H > 1."""

import dataclasses
import json

import numpy as np
import pytest

import attndev
from conftest import assert_bit_identical, read_safetensors, run_cli

FP8_POLICY = {"base": "fp8-e4m3", "input": "bf16"}  # fp8 algorithms quantize bf16 inputs themselves


@dataclasses.dataclass(frozen=True)
class Case:
    algo: str
    policy: object
    n: int = 75
    n_kv: int = 0
    d: int = 32
    batch: int = 1
    heads: int = 1
    br: int = 32
    bc: int = 16
    causal: bool = False
    scale_on: str = "scores"

    def __str__(self):
        p = self.policy if isinstance(self.policy, str) else "custom"
        return (f"{self.algo}-{p}-N{self.n}x{self.n_kv or self.n}-d{self.d}-B{self.batch}"
                f"H{self.heads}-{self.br}x{self.bc}{'-causal' if self.causal else ''}"
                f"-{self.scale_on}")

    def policy_arg(self):
        return self.policy if isinstance(self.policy, str) else json.dumps(self.policy)


CASES = [
    # Every algorithm at least once.
    Case("baseline", "kernel-bf16"),
    Case("flash1", "kernel-bf16"),
    Case("flash2", "kernel-bf16"),
    Case("flash3-fp8", FP8_POLICY, d=64),
    Case("flash3-fp8-per-tensor", FP8_POLICY, d=64),
    Case("flash3-fp8-no-hadamard", FP8_POLICY, d=48),
    Case("baseline-fp8", FP8_POLICY, d=64),
    # A sample of presets, each fast path and the generic one.
    Case("flash2", "kernel-fp16", n=113, d=64, br=64, bc=64),
    Case("flash1", "framework-bf16", n=113, bc=32),
    Case("flash2", "working-bf16"),
    Case("baseline", "torch-math-fp16"),
    Case("flash2", "fp32", n=40, d=16),
    Case("flash2", "fp64", n=40, d=16),
    Case("flash2", {"base": "kernel-bf16", "prob": "fp32", "fma": False}),
    # Masks, shapes and scale placement.
    Case("flash2", "kernel-bf16", n=75, n_kv=40, causal=True, batch=2, heads=3),
    Case("flash1", "framework-fp16", n=40, n_kv=75, causal=True),
    Case("flash2", "kernel-bf16", scale_on="query", br=16, bc=128),
]


def dump_point(cli, tmp_path, c):
    out = tmp_path / "dump"
    args = ["point", "--algo", c.algo, "--policy", c.policy_arg(), "--n", c.n, "--d", c.d,
            "--batch", c.batch, "--heads", c.heads, "--br", c.br, "--bc", c.bc, "--scale-on",
            c.scale_on, "--seed", 7, "--dump", out, "--json"]
    if c.n_kv:
        args += ["--n-kv", c.n_kv]
    if c.causal:
        args.append("--causal")
    report = json.loads(run_cli(cli, *args).stdout)
    return out, report


@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_matches_cli_dump(cli, tmp_path, case):
    out, report = dump_point(cli, tmp_path, case)
    fmt = attndev.policy_formats(case.policy)
    inputs = read_safetensors(out / f"inputs-{fmt['input']}.safetensors")
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    kw = dict(block=(case.br, case.bc), causal=case.causal, scale_on=case.scale_on)
    o = attndev.attention(q, k, v, algo=case.algo, policy=case.policy, **kw)
    # The variant's file: the one that is neither inputs, golden nor the baseline.
    (variant_file,) = [p.name for p in out.iterdir()
                       if not p.name.startswith(("inputs-", "golden-", "baseline."))]
    assert_bit_identical(o, read_safetensors(out / variant_file)["o"], f"{case} variant")
    # The same-precision baseline the CLI puts beside it.
    b = attndev.attention(q, k, v, algo="baseline", policy=case.policy, **kw)
    assert_bit_identical(b, read_safetensors(out / "baseline.safetensors")["o"], f"{case} baseline")
    # The golden on the same rounded inputs, and the CLI's metrics from the one measurement path.
    g = attndev.golden(q, k, v, causal=case.causal, scale_on=case.scale_on, policy=case.policy)
    assert_bit_identical(g, read_safetensors(out / f"golden-{fmt['input']}.safetensors")["o"],
                         f"{case} golden")
    dev = attndev.deviation(o, g, policy=case.policy)
    for name in ("max_abs", "mean_abs", "std_abs", "rmse", "rel_l2", "max_rel", "cos_sim",
                 "nan_count", "inf_count", "worst_index", "count"):
        assert dev[name] == report["variant"][name], (name, dev[name], report["variant"][name])
    assert dev["max_rel_floor"] == report["max_rel_floor"]


def test_raw_inputs_are_rounded_like_the_cli(cli, tmp_path):
    """Unrounded float64 inputs: the package rounds them to the policy's input format exactly as
    `attndev point --inputs` rounds a file's values (the file is written here as .npy)."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 57, 24)) for _ in range(3))  # (H, N, d)
    folder = tmp_path / "qkv"
    folder.mkdir()
    for name, t in (("q", q), ("k", k), ("v", v)):
        np.save(folder / f"{name}.npy", t)
    out = tmp_path / "dump"
    report = json.loads(run_cli(cli, "point", "--algo", "flash2", "--policy", "kernel-fp16",
                                "--br", 16, "--bc", 32, "--inputs", folder, "--dump", out,
                                "--json").stdout)
    o = attndev.attention(q, k, v, algo="flash2", policy="kernel-fp16", block=(16, 32))
    assert o.shape == (2, 57, 24)
    expected = read_safetensors(out / "flash2-kernel-fp16.safetensors")["o"]
    assert_bit_identical(o, expected.reshape(o.shape), "rounded from float64")
    # The golden of the same raw inputs, rounded by policy=, and the metrics against it.
    g = attndev.golden(q, k, v, policy="kernel-fp16")
    expected = read_safetensors(out / "golden-fp16.safetensors")["o"]
    assert_bit_identical(g, expected.reshape(g.shape), "golden rounded from float64")
    assert attndev.deviation(o, g, policy="kernel-fp16")["rmse"] == report["variant"]["rmse"]
    unrounded = attndev.golden(q, k, v)  # no policy: the values as given
    assert not np.array_equal(unrounded, g)
