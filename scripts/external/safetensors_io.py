"""Safetensors files with numpy alone: the file format of attndev's external-variant protocol.

attndev writes an external command's inputs as one .safetensors file (tensors q, k, v of shape
(B, H, N, d), dtype BF16/F16/F32/F64, string metadata with the point's axes) and reads the
command's output O back from a .safetensors (or .npy) file. numpy has no bfloat16, so BF16
tensors are read into float32 (exactly: a bf16 is the top half of a float32) and written from
float32 with round-to-nearest-even, as attndev rounds.

Layout: 8-byte little-endian header length N, N bytes of JSON
{"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
then the data buffer, tensors back to back in C order, little-endian.
"""
import json
import struct

import numpy as np

_NUMPY = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2")}


def read(path):
    """Returns ({name: ndarray}, metadata). BF16 comes back as float32, exactly."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(data[8:8 + n])
    buffer = memoryview(data)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        raw = buffer[begin:end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            tensors[name] = bits.view(np.float32).reshape(shape)
        elif info["dtype"] in _NUMPY:
            tensors[name] = np.frombuffer(raw, dtype=_NUMPY[info["dtype"]]).reshape(shape)
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {info['dtype']} not supported")
    return tensors, metadata


def bf16_bits(values):
    """float32 -> bfloat16 bit patterns, round-to-nearest-even; NaN stays NaN."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def write(path, tensors, metadata=None):
    """tensors: {name: (ndarray, dtype)} with dtype one of BF16, F16, F32, F64."""
    header, chunks, offset = {}, [], 0
    for name, (array, dtype) in tensors.items():
        array = np.asarray(array)
        if dtype == "BF16":
            raw = bf16_bits(array.astype(np.float32)).astype("<u2").tobytes()
        elif dtype in _NUMPY:
            raw = np.ascontiguousarray(array, dtype=_NUMPY[dtype]).tobytes()
        else:
            raise ValueError(f"dtype {dtype} not supported")
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # data aligned to 8 bytes, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for chunk in chunks:
            f.write(chunk)
