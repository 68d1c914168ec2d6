"""python/attndev/worker.py, the Python side of the external-variant worker protocol, driven as
attndev drives it: started by its path (so without attndev's compiled module), requests on stdin,
answers on the fd named by $ATTNDEV_WORKER_FD, the log on stdout/stderr. Each test checks one rule
of the protocol (docs/configs.md#external-workers); the files are read back with conftest's
independent safetensors reader."""

import json
import os
import pathlib
import select
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from conftest import REPO, assert_bit_identical, read_safetensors

WORKER = REPO / "python" / "attndev" / "worker.py"
NUMPY_SCRIPT = REPO / "scripts" / "external" / "numpy_attention.py"


def write_inputs(path, q, k, v):
    """q, k, v as F32 tensors of a safetensors file, written from the format's definition."""
    header, blobs, offset = {}, [], 0
    for name, a in (("q", q), ("k", k), ("v", v)):
        raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"point_id": "p0"}
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class Worker:
    """One worker process: requests to its stdin, answers from a pipe, log to a file."""

    def __init__(self, target, *args, tmp, module_form=False):
        """module_form: started as `python3 -m attndev.worker` with only the source tree's
        python/ folder on PYTHONPATH (no compiled module there), instead of by its path."""
        self.answers_r, answers_w = os.pipe()
        self.log = open(tmp / "log.txt", "w+")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["ATTNDEV_WORKER_FD"] = str(answers_w)  # attndev's is 3; any number works
        command = [sys.executable, str(WORKER)]
        if module_form:
            env["PYTHONPATH"] = str(REPO / "python")
            command = [sys.executable, "-m", "attndev.worker"]
        # From a folder outside the repository: nothing named attndev is importable there.
        self.proc = subprocess.Popen([*command, target, *args],
                                     stdin=subprocess.PIPE, stdout=self.log, stderr=self.log,
                                     pass_fds=(answers_w,), env=env, cwd=tmp, text=True)
        os.close(answers_w)
        self.buffer = b""
        self.next_id = 0

    def answer(self, timeout=60):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, "no answer from the worker in time; log:\n" + self.log_text()
            ready, _, _ = select.select([self.answers_r], [], [], left)
            if ready:
                chunk = os.read(self.answers_r, 4096)
                if not chunk:
                    return None  # the worker closed its answers: it exited
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, inputs, output, axes=None):
        self.next_id += 1
        request = {"id": self.next_id, "inputs": str(inputs), "output": str(output),
                   "format": "fp32", "axes": axes or {"causal": False}}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def log_text(self):
        self.log.flush()
        return pathlib.Path(self.log.name).read_text()

    def close(self):
        if self.proc.stdin:
            self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        os.close(self.answers_r)
        return code


@pytest.fixture
def inputs(tmp_path):
    rng = np.random.default_rng(27)
    q, k, v = (rng.standard_normal((1, 2, 33, 16)).astype(np.float32) for _ in range(3))
    path = tmp_path / "inputs.safetensors"
    write_inputs(path, q, k, v)
    return path, q, k, v


def user_module(tmp_path, body):
    path = tmp_path / "user_kernel.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_computes_points_like_the_per_point_script(tmp_path, inputs):
    """Two points on one worker (one process: the pid of the ready line), each O bit-identical to
    numpy_attention.py run as a per-point command on the same file."""
    path, q, k, v = inputs
    w = Worker(f"{NUMPY_SCRIPT}:worker_point", tmp=tmp_path)
    ready = w.answer()
    assert ready["ready"] is True and ready["pid"] == w.proc.pid
    for causal in (False, True):
        out = tmp_path / f"o-{causal}.safetensors"
        assert w.ask(path, out, {"causal": causal}) == {"id": w.next_id, "status": "done"}
        ref = tmp_path / f"ref-{causal}.safetensors"
        subprocess.run([sys.executable, str(NUMPY_SCRIPT), str(path), str(ref), "--causal",
                        "true" if causal else "false"], check=True)
        assert_bit_identical(read_safetensors(out)["o"], read_safetensors(ref)["o"],
                             f"worker vs per-point, causal={causal}")
    assert w.close() == 0  # end of file on stdin: a clean exit


def test_function_receives_arrays_and_meta(tmp_path, inputs):
    """q, k, v arrive as the file's float32 arrays; meta carries format, axes, args, metadata."""
    path, q, k, v = inputs
    mod = user_module(tmp_path, """
        import json, sys
        def f(q, k, v, meta):
            print("user log line")  # stdout is the log, never the answers
            assert q.dtype.name == "float32" and q.shape == (1, 2, 33, 16)
            assert meta["format"] == "fp32" and meta["args"] == ["--x", "1"]
            assert meta["axes"]["seq_len"] == 33 and meta["metadata"]["point_id"] == "p0"
            return (q + k + v).astype("float64")
    """)
    w = Worker(f"{mod}:f", "--x", "1", tmp=tmp_path)
    assert w.answer()["ready"]
    out = tmp_path / "o.safetensors"
    assert w.ask(path, out, {"causal": False, "seq_len": 33})["status"] == "done"
    assert_bit_identical(read_safetensors(out)["o"], (q + k + v).astype(np.float64), "returned O")
    assert w.close() == 0
    assert "user log line" in w.log_text()


def test_an_exception_fails_its_point_only(tmp_path, inputs):
    """A raising function answers failed with the exception's text; the next point still works."""
    path, q, k, v = inputs
    mod = user_module(tmp_path, """
        calls = []
        def f(q, k, v, meta):
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("no kernel for these inputs")
            return q
    """)
    w = Worker(f"{mod}:f", tmp=tmp_path)
    assert w.answer()["ready"]
    first = w.ask(path, tmp_path / "a.safetensors")
    assert first == {"id": 1, "status": "failed", "error": "RuntimeError: no kernel for these inputs"}
    assert not (tmp_path / "a.safetensors").exists()
    assert w.ask(path, tmp_path / "b.safetensors")["status"] == "done"
    assert w.close() == 0
    assert "Traceback" in w.log_text()  # the traceback is in the log


def test_exit_77_skips_with_the_last_stderr_line(tmp_path, inputs):
    path, *_ = inputs
    w = Worker(f"{NUMPY_SCRIPT}:worker_point", "--fail", "skip", tmp=tmp_path)
    assert w.answer()["ready"]
    assert w.ask(path, tmp_path / "o.safetensors") == {
        "id": 1, "status": "skipped", "reason": "numpy_attention: cannot run here (--fail skip)"}
    exit3 = Worker(f"{NUMPY_SCRIPT}:worker_point", "--fail", "exit", tmp=tmp_path)
    assert exit3.answer()["ready"]
    a = exit3.ask(path, tmp_path / "o.safetensors")
    assert a["status"] == "failed" and a["error"].startswith("the function called sys.exit(3)")
    assert w.close() == 0 and exit3.close() == 0


def test_torch_bfloat16_output_is_written_as_bf16(tmp_path, inputs):
    torch = pytest.importorskip("torch")
    path, q, *_ = inputs
    mod = user_module(tmp_path, """
        import torch
        def f(q, k, v, meta):
            return torch.from_numpy(q).to(torch.bfloat16)
    """)
    w = Worker(f"{mod}:f", tmp=tmp_path)
    assert w.answer()["ready"]
    out = tmp_path / "o.safetensors"
    assert w.ask(path, out)["status"] == "done"
    header = json.loads(out.read_bytes()[8:8 + struct.unpack("<Q", out.read_bytes()[:8])[0]])
    assert header["o"]["dtype"] == "BF16"
    expected = torch.from_numpy(q).to(torch.bfloat16).double().numpy()
    assert_bit_identical(read_safetensors(out)["o"], expected, "bf16 O")
    assert w.close() == 0


@pytest.mark.parametrize("target,message", [
    ("no_such_module_h27:f", "ModuleNotFoundError"),
    ("numpy:no_such_function", "numpy has no function 'no_such_function'"),
    ("missing-colon", "expected MODULE:FUNCTION"),
])
def test_a_bad_target_exits_at_start_saying_why(tmp_path, target, message):
    """No ready line, a non-zero exit, and the reason in the log (attndev quotes it in the row)."""
    w = Worker(target, tmp=tmp_path)
    assert w.answer() is None
    assert w.close() == 3
    assert message in w.log_text()


def test_importable_without_the_compiled_module_and_not_shadowing_torch(tmp_path):
    """Run by its path the worker needs numpy alone, and its folder (which holds attndev's own
    torch.py) is not on sys.path, so a user's `import torch` finds PyTorch or nothing."""
    mod = user_module(tmp_path, """
        import sys
        def f(q, k, v, meta):
            return q
        try:
            import torch
            assert hasattr(torch, "Tensor"), "attndev/torch.py shadowed PyTorch"
        except ImportError:
            pass
        assert "attndev" not in sys.modules and "attndev._core" not in sys.modules
    """)
    w = Worker(f"{mod}:f", tmp=tmp_path)
    ready = w.answer()
    assert ready is not None, w.log_text()
    assert w.close() == 0


def test_module_form_runs_from_the_source_tree_without_the_compiled_module(tmp_path, inputs):
    """`PYTHONPATH=python python3 -m attndev.worker` imports the package, whose __init__ loads the
    compiled module only on first use: the source tree (no _core there) is enough, and the point
    it computes is the per-point script's, bit for bit."""
    path, q, k, v = inputs
    mod = user_module(tmp_path, f"""
        import sys
        sys.path.insert(0, {str(NUMPY_SCRIPT.parent)!r})
        import numpy_attention
        def f(q, k, v, meta):
            assert "attndev" in sys.modules and "attndev._core" not in sys.modules
            return numpy_attention.worker_point(q, k, v, meta)
    """)
    w = Worker(f"{mod}:f", tmp=tmp_path, module_form=True)
    assert w.answer() is not None, w.log_text()
    out = tmp_path / "o.safetensors"
    assert w.ask(path, out, {"causal": False}) == {"id": w.next_id, "status": "done"}, w.log_text()
    ref = tmp_path / "ref.safetensors"
    subprocess.run([sys.executable, str(NUMPY_SCRIPT), str(path), str(ref), "--causal", "false"],
                   check=True)
    assert_bit_identical(read_safetensors(out)["o"], read_safetensors(ref)["o"],
                         "module-form worker vs per-point")
    assert w.close() == 0


def test_without_the_answer_fd_it_says_how_it_is_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ATTNDEV_WORKER_FD"}
    r = subprocess.run([sys.executable, str(WORKER), "numpy:sum"], capture_output=True, text=True,
                       env=env, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode != 0
    assert "ATTNDEV_WORKER_FD is not set" in r.stderr


def test_ends_mid_point_when_attndev_is_gone(tmp_path, inputs):
    """attndev killed while a point runs closes the worker's stdin (the kernel does): the worker
    exits at once instead of finishing (or hanging in) the point."""
    path, *_ = inputs
    w = Worker(f"{NUMPY_SCRIPT}:worker_point", "--fail", "hang", tmp=tmp_path)
    assert w.answer()["ready"]
    w.proc.stdin.write(json.dumps({"id": 1, "inputs": str(path), "output": str(tmp_path / "o"),
                                   "format": "fp32", "axes": {}}) + "\n")
    w.proc.stdin.flush()
    time.sleep(0.5)  # into the function's sleep (the test passes either way: a hang is an hour)
    assert w.close() == 0  # close() waits at most 30 s; the point would take an hour
