"""The Python side of attndev's external-variant worker protocol (docs/configs.md#external-workers).

    python3 -m attndev.worker MODULE:FUNCTION [ARGS...]
    python3 path/to/attndev/worker.py MODULE:FUNCTION [ARGS...]

Started once per run by `attndev run` for a variant written
``"external": {"worker": "python3 -m attndev.worker my_kernel:attention"}``, it imports MODULE
(a dotted module name, or the path of a .py file), then computes one point per request:

    o = FUNCTION(q, k, v, meta)

q, k, v are numpy arrays of shape (B, H, N, d) holding the point's inputs, already rounded to the
variant's format (float16 for fp16, float32 for bf16 and fp32, float64 for fp64); meta is a dict:
``format`` ("bf16", ...), ``axes`` (the point's axes: seq_len, causal, block_r, ...), ``args``
(ARGS, the command line's words after MODULE:FUNCTION) and ``metadata`` (the inputs file's). The
function returns O, (B, H, N_q, d), as a numpy array or a PyTorch tensor (a bfloat16 tensor is
written as BF16, exactly). A function that raises fails its point only (the traceback goes to the
log); one that calls ``sys.exit(77)`` skips it (the last line it printed to stderr is the
reason), as a per-point command's exit status 77 does.

This file is pure Python with numpy alone: it does not import attndev's compiled module, so an
environment with only numpy (and torch) can run it by its path.

Wire protocol (what attndev and this file agree on): requests arrive on stdin, one JSON object a
line ({"id", "inputs", "output", "format", "axes"}); answers go to the fd named by
$ATTNDEV_WORKER_FD, one JSON object a line: {"ready": true} once after the import, then
{"id", "status": "done"|"failed"|"skipped", "error"|"reason"}. Whatever else is printed, to stdout
or stderr, is the worker's log. End of file on stdin ends the worker, also in the middle of a
point (attndev has gone).
"""

import os
import sys

if __name__ == "__main__":
    # Run by its path, this file's folder is sys.path[0]: its sibling torch.py would then be what a
    # user's `import torch` finds. The folder is not a place to import from.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import importlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import struct  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402

import numpy as np

SKIP = 77  # as a per-point command's exit status: "cannot run here"

_NUMPY = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2")}
_SAFETENSORS = {np.dtype("float64"): "F64", np.dtype("float32"): "F32",
                np.dtype("float16"): "F16"}


def read_safetensors(path):
    """({name: ndarray}, metadata) of a safetensors file: an 8-byte little-endian header length, a
    JSON header of {name: {dtype, shape, data_offsets}}, then the data. BF16 is read into float32
    exactly (a bfloat16 is the upper half of a binary32)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    metadata = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        if info["dtype"] == "BF16":
            bits = np.frombuffer(data[begin:end], dtype="<u2").astype(np.uint32) << 16
            tensors[name] = bits.view(np.float32).reshape(shape)
        elif info["dtype"] in _NUMPY:
            tensors[name] = np.frombuffer(data[begin:end], dtype=_NUMPY[info["dtype"]]).reshape(shape)
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {info['dtype']} not supported")
    return tensors, metadata


def _bf16_bits(values):
    """float32 -> bfloat16 bit patterns, round to nearest even (exact for values that are bf16)."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), ((u >> 16) | 0x40).astype(np.uint16), rounded)


def write_safetensors(path, name, array, dtype):
    """One tensor, dtype F64/F32/F16/BF16, written whole to a temporary file, then renamed: a
    reader never sees half of it."""
    if dtype == "BF16":
        raw = _bf16_bits(array).astype("<u2").tobytes()
    else:
        raw = np.ascontiguousarray(array, dtype=_NUMPY[dtype]).tobytes()
    header = json.dumps({name: {"dtype": dtype, "shape": list(array.shape),
                                "data_offsets": [0, len(raw)]}}, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(raw)
    os.replace(tmp, path)


def as_output(o):
    """(array, safetensors dtype) of a function's result: numpy, or a PyTorch tensor on any
    device (moved to the CPU; bfloat16 widened to float32, exactly, and written as BF16)."""
    if type(o).__module__.startswith("torch") and hasattr(o, "detach"):
        import torch
        t = o.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.float().numpy(), "BF16"
        o = t.numpy()
    a = np.asarray(o)
    if a.dtype not in _SAFETENSORS:
        raise TypeError(f"the function returned dtype {a.dtype}; return float16, float32, float64 "
                        f"(or a bfloat16 PyTorch tensor)")
    return a, _SAFETENSORS[a.dtype]


def load(target):
    """The function named by MODULE:FUNCTION; MODULE is a dotted name or a .py file's path."""
    module_name, sep, function_name = target.rpartition(":")
    if not sep or not module_name or not function_name:
        raise ValueError(f"{target!r}: expected MODULE:FUNCTION, e.g. my_kernel:attention or "
                         f"scripts/external/numpy_attention.py:worker_point")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        # The file's folder first on the path, as `python3 FILE` would put it: its own imports work.
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        if spec is None:
            raise ImportError(f"{module_name}: cannot be imported (not a Python file?)")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise AttributeError(f"{module_name} has no function {function_name!r}")
    return function


class _Tee(io.TextIOBase):
    """stderr during one call: written through to the log, and kept, so that the reason of a
    sys.exit(77) is the last line the function printed, as with a per-point command."""

    def __init__(self, target):
        self.target, self.text = target, []

    def write(self, s):
        self.text.append(s)
        return self.target.write(s)

    def flush(self):
        self.target.flush()

    def last_line(self):
        lines = [line for line in "".join(self.text).splitlines() if line.strip()]
        return lines[-1] if lines else ""


def compute(function, request, args):
    """The answer dict for one request (never raises for a failing function)."""
    answer = {"id": request["id"]}
    tee = _Tee(sys.stderr)
    saved, sys.stderr = sys.stderr, tee
    try:
        tensors, metadata = read_safetensors(request["inputs"])
        meta = {"format": request.get("format"), "axes": request.get("axes", {}),
                "args": list(args), "metadata": metadata}
        o, dtype = as_output(function(tensors["q"], tensors["k"], tensors["v"], meta))
        write_safetensors(request["output"], "o", o, dtype)
        answer["status"] = "done"
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code == SKIP:
            answer.update(status="skipped", reason=tee.last_line() or "exit status 77")
        else:
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
            answer.update(status="failed", error=f"the function called sys.exit({e.code!r})" +
                          (f": {tee.last_line()}" if tee.last_line() else ""))
    except Exception as e:  # noqa: BLE001 - any failure of one point is that point's answer
        traceback.print_exc()
        answer.update(status="failed", error=f"{type(e).__name__}: {e}")
    finally:
        sys.stderr = saved
        sys.stderr.flush()
        sys.stdout.flush()
    return answer


def _exit_when_closed(fd):
    """Ends this process when the other end of the requests is closed, even in the middle of a
    point: attndev closes it when it ends a worker, and the kernel closes it when attndev dies
    (killed, crashed), so that a worker computing an hour-long point (or hung in one) never
    outlives it. Only hang-up is watched, never readable data: a pending request is the main
    thread's."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP | getattr(select, "POLLRDHUP", 0))
    while True:
        for _, events in poller.poll():
            if events & (select.POLLHUP | getattr(select, "POLLRDHUP", 0) | select.POLLNVAL):
                os._exit(0)


def serve(function, args=(), requests=None, answers=None):
    """Answers requests until end of file. `requests`/`answers` default to stdin and the fd in
    $ATTNDEV_WORKER_FD."""
    requests = requests if requests is not None else sys.stdin
    if answers is None:
        fd = os.environ.get("ATTNDEV_WORKER_FD")
        if fd is None:
            raise SystemExit("attndev.worker: $ATTNDEV_WORKER_FD is not set: this program is "
                             "started by `attndev run` for a variant written \"external\": "
                             "{\"worker\": \"python3 -m attndev.worker MODULE:FUNCTION\"}")
        answers = os.fdopen(int(fd), "w", buffering=1)

    def answer(obj):
        answers.write(json.dumps(obj) + "\n")
        answers.flush()

    if requests is sys.stdin:
        threading.Thread(target=_exit_when_closed, args=(sys.stdin.fileno(),), daemon=True).start()
    answer({"ready": True, "protocol": 1, "pid": os.getpid()})
    while True:
        line = requests.readline()
        if not line:
            return
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or "id" not in request:
                raise ValueError("not an object with an id")
        except ValueError as e:
            # Not attndev's: there is no id to answer; say so in the log and stop.
            raise SystemExit(f"attndev.worker: a request that is not the protocol's ({e}): "
                             f"{line[:200]!r}")
        answer(compute(function, request, args))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    try:
        function = load(argv[0])
    except Exception as e:  # noqa: BLE001 - any import failure ends the start, with its reason
        traceback.print_exc()
        print(f"attndev.worker: cannot load {argv[0]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    serve(function, argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
