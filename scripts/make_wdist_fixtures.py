#!/usr/bin/python3
"""Writes the fixtures of `attndev wdist`'s tests into test/data/wdist/ (committed; rerun only to
change them). Expected values come from scipy.stats.wasserstein_distance and numpy, never from
attndev, so the C++ test checks our W1 against an independent implementation.

Usage: /usr/bin/python3 scripts/make_wdist_fixtures.py [OUT_DIR]
(numpy + scipy from Debian: scripts/setup.sh installs python3-numpy python3-scipy.)

Every case is a pair of files (A, B) and a tensor name; expected.json lists, per case, W1,
max|b-a| and ||b-a||/||a|| (the last two only for equal shapes), computed on the values exactly
as stored (after rounding to the file's dtype). safetensors files are written by hand
(struct + json) so no extra package is needed.
"""
import json
import os
import struct
import sys

import numpy as np
from scipy.stats import wasserstein_distance

SEED = 20240611  # fixed: the fixtures are committed; changing it rewrites them all


def bf16_round(x):
    """float32 array -> (uint16 bf16 bits, float64 values), round-to-nearest-even."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    values = (rounded.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return rounded, values


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype string, shape, raw little-endian bytes)."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def stored(dtype, x):
    """Values as the file stores them (float64) and the raw bytes."""
    x = np.asarray(x)
    if dtype == "F64":
        v = x.astype("<f8")
        return v.astype(np.float64), v.tobytes()
    if dtype == "F32":
        v = x.astype("<f4")
        return v.astype(np.float64), v.tobytes()
    if dtype == "F16":
        v = x.astype("<f2")
        return v.astype(np.float64), v.tobytes()
    if dtype == "BF16":
        bits, values = bf16_round(x.astype(np.float32))
        return values.reshape(x.shape), bits.astype("<u2").tobytes()
    raise ValueError(dtype)


def expected(name, file_a, file_b, tensor, a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    case = {"name": name, "file_a": file_a, "file_b": file_b, "tensor": tensor,
            "count_a": int(a.size), "count_b": int(b.size),
            "scale": float(max(np.abs(a).max(), np.abs(b).max())),
            "w1": float(wasserstein_distance(a.ravel(), b.ravel()))}
    if a.shape == b.shape:
        d = b.ravel() - a.ravel()
        case["max_abs"] = float(np.abs(d).max())
        case["rel_l2"] = float(np.linalg.norm(d) / np.linalg.norm(a.ravel()))
    return case


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "test", "data", "wdist")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    cases = []

    # --- .npy pairs (float64 unless noted) -------------------------------------------------
    npy_cases = {
        "equal": (rng.normal(0, 1, 200), rng.normal(0.1, 1.2, 200)),
        "unequal": (rng.normal(0, 1, 150), rng.normal(0.3, 0.8, 97)),
        # few distinct values, many ties within and across the samples
        "ties": (rng.integers(-3, 4, 120).astype(np.float64),
                 rng.integers(-2, 5, 77).astype(np.float64)),
        "negative": (rng.uniform(-9, -1, 64), rng.uniform(-8, -0.5, 90)),
        # heavy tails: a few samples dominate the integral
        "heavy": (rng.standard_t(1.2, 256), rng.standard_cauchy(256) * 0.5),
        # large offset, small spread: catastrophic cancellation in x_{k+1} - x_k if done badly
        "offset": (1e6 + rng.normal(0, 1e-3, 100), 1e6 + rng.normal(2e-4, 1e-3, 100)),
        "single": (np.array([2.5]), np.array([-1.0, 0.0, 7.0])),
    }
    for name, (a, b) in npy_cases.items():
        np.save(os.path.join(out, f"{name}_a.npy"), a.astype("<f8"))
        np.save(os.path.join(out, f"{name}_b.npy"), b.astype("<f8"))
        cases.append(expected(name, f"{name}_a.npy", f"{name}_b.npy", name + "_a", a, b))

    # float32 / float16 .npy, a 2-D Fortran-ordered one and format versions 2.0 and 3.0
    a = rng.normal(0, 1, (6, 7)).astype("<f4")
    b = (a + rng.normal(0, 1e-2, a.shape)).astype("<f4")
    np.save(os.path.join(out, "f32_a.npy"), a)
    np.save(os.path.join(out, "f32_fortran_b.npy"), np.asfortranarray(b))
    cases.append(expected("f32_fortran", "f32_a.npy", "f32_fortran_b.npy", "f32_a", a, b))
    a = rng.normal(0, 2, (5, 3)).astype("<f2")
    b = rng.normal(0, 2, (5, 3)).astype("<f2")
    with open(os.path.join(out, "f16_v2_a.npy"), "wb") as f:
        np.lib.format.write_array(f, a, version=(2, 0))
    with open(os.path.join(out, "f16_v3_b.npy"), "wb") as f:
        np.lib.format.write_array(f, b, version=(3, 0))
    cases.append(expected("f16_versions", "f16_v2_a.npy", "f16_v3_b.npy", "f16_v2_a", a, b))

    # --- safetensors pair: one tensor per dtype, equal and unequal shapes -----------------
    specs = [("w.f64", "F64", (8, 5), (8, 5)), ("w.f32", "F32", (4, 9), (4, 9)),
             ("w.f16", "F16", (33,), (33,)), ("w.bf16", "BF16", (3, 4, 5), (3, 4, 5)),
             ("bias", "F32", (10,), (17,))]
    tensors_a, tensors_b = [], []
    for tname, dtype, shape_a, shape_b in specs:
        xa = rng.normal(0, 1, shape_a)
        xb = xa + rng.normal(0, 0.05, shape_a) if shape_a == shape_b else rng.normal(0, 1, shape_b)
        va, raw_a = stored(dtype, xa)
        vb, raw_b = stored(dtype, xb)
        tensors_a.append((tname, dtype, shape_a, raw_a))
        tensors_b.append((tname, dtype, shape_b, raw_b))
        cases.append(expected("st_" + tname, "pair_a.safetensors", "pair_b.safetensors", tname,
                              va, vb))
    write_safetensors(os.path.join(out, "pair_a.safetensors"), tensors_a, {"step": "0"})
    # B lists its tensors in reverse order: matching is by name, not position.
    write_safetensors(os.path.join(out, "pair_b.safetensors"), tensors_b[::-1], {"step": "100"})

    # --- folders: matched by relative file name and tensor name; unmatched on both sides ----
    for side in ("a", "b"):
        os.makedirs(os.path.join(out, f"dir_{side}", "sub"), exist_ok=True)
    x = rng.normal(0, 1, (4, 4))
    y = x + rng.normal(0, 0.1, (4, 4))
    write_safetensors(os.path.join(out, "dir_a", "model.safetensors"),
                      [("emb", "F32", (4, 4), stored("F32", x)[1]),
                       ("only_in_a", "F32", (2,), stored("F32", [1.0, 2.0])[1])])
    write_safetensors(os.path.join(out, "dir_b", "model.safetensors"),
                      [("emb", "F32", (4, 4), stored("F32", y)[1]),
                       ("only_in_b", "F32", (1,), stored("F32", [3.0])[1])])
    cases.append(expected("dir_emb", "dir_a/model.safetensors", "dir_b/model.safetensors", "emb",
                          stored("F32", x)[0], stored("F32", y)[0]))
    u = rng.normal(0, 1, 30)
    v = rng.normal(0, 1, 30)
    np.save(os.path.join(out, "dir_a", "sub", "head.npy"), u)
    np.save(os.path.join(out, "dir_b", "sub", "head.npy"), v)
    np.save(os.path.join(out, "dir_a", "sub", "extra_a.npy"), u[:3])
    cases.append(expected("dir_head", "dir_a/sub/head.npy", "dir_b/sub/head.npy", "head", u, v))

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"generator": "scripts/make_wdist_fixtures.py", "seed": SEED,
                   "scipy": __import__("scipy").__version__, "numpy": np.__version__,
                   "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
