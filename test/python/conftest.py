"""Shared helpers of the attndev Python tests: the CLI to compare with, and an independent reader of
the safetensors files `attndev point --dump` writes (written here from the format's definition, not
through attndev, so that a bug in the C++ reader cannot hide a mismatch)."""

import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    """Path of the attndev binary (ATTNDEV_BIN, else the release build's)."""
    path = pathlib.Path(os.environ.get("ATTNDEV_BIN", REPO / "build/release/apps/attndev/attndev"))
    if not path.exists():
        pytest.fail(f"no attndev binary at {path}: build it (scripts/build.sh release attndev) or "
                    f"set ATTNDEV_BIN")
    return path


def run_cli(cli, *args, check=True):
    r = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"attndev {' '.join(map(str, args))}: exit {r.returncode}\n{r.stderr}")
    return r


def _decode(dtype, raw, shape):
    if dtype == "F64":
        return np.frombuffer(raw, dtype="<f8").reshape(shape)
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(np.float64).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float64).reshape(shape)
    if dtype == "BF16":
        # bf16 is the upper half of an IEEE binary32: widen by a 16-bit shift, exactly.
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64).reshape(shape)
    raise AssertionError(f"safetensors dtype {dtype} not handled by the test reader")


def read_safetensors(path):
    """{name: float64 array} of a safetensors file: an 8-byte little-endian header length, a JSON
    header of {name: {dtype, shape, data_offsets}}, then the data."""
    blob = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = _decode(t["dtype"], data[begin:end], t["shape"])
    return out


def assert_bit_identical(a, b, what):
    """Same shape and the same float64 bits everywhere (NaN included); the first differing element
    is named on failure."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    diff = np.flatnonzero(a.view(np.uint64) != b.view(np.uint64))
    if diff.size:
        i = diff[0]
        raise AssertionError(f"{what}: {diff.size} of {a.size} elements differ; first at flat "
                             f"{i}: {a.reshape(-1)[i]!r} vs {b.reshape(-1)[i]!r}")
