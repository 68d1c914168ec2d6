"""Every ```python block of README.md and docs/python.md runs, as a reader would paste it, in a
fresh interpreter with the installed package. A block that cannot run here says so in the doc,
on the line before it, and is skipped by name with that reason, never silently:

    <!-- doc-test: skip REASON -->          never run here (an install, a GPU, a download)
    <!-- doc-test: needs MODULE... -->      run where these modules import, else skipped
"""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/python.md")
MARK = re.compile(r"<!--\s*doc-test:\s*(skip|needs)\s+(.+?)\s*-->")


def python_blocks():
    out = []
    for doc in DOCS:
        lines = (REPO / doc).read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "```python":
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            mark = MARK.search(lines[i - 1]) if i > 0 else None
            code = "\n".join(lines[i + 1:end])
            out.append(pytest.param(code, mark and mark.groups(), id=f"{doc}:{i + 1}"))
    return out


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks():
    assert len(BLOCKS) >= 4  # docs/python.md's examples; a broken extraction finds none


@pytest.mark.parametrize("code,mark", BLOCKS)
def test_python_block_runs(code, mark, tmp_path, request):
    name = request.node.callspec.id
    if mark and mark[0] == "skip":
        pytest.skip(f"{name}: {mark[1]} (marked in the doc)")
    if mark and mark[0] == "needs":
        missing = [m for m in mark[1].split() if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"{name}: needs {', '.join(missing)} (marked in the doc)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"{name} failed:\n{code}\n--- stderr ---\n{r.stderr}"
