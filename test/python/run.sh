#!/usr/bin/env bash
# The attndev Python package's tests (test/python, pytest), in the package's own virtual
# environment, as ctest's `python_package` entry runs them (test/python/extra.cmake):
#
#   test/python/run.sh [ATTNDEV_BIN] [pytest arguments...]
#
# Creates build/venv-py with Debian's python3 (scripts/setup.sh installs python3-venv and
# python3-dev), installs numpy and pytest from PyPI and the package itself with `pip install .`
# (scikit-build-core builds the extension from this repository's CMake; nothing goes into the
# system's Python). ATTNDEV_BIN is the CLI the tests compare with (default: the release build's).
# ATTNDEV_PYTHON_TORCH=1 also installs torch and transformers from PyPI (about 5 GiB: PyPI's torch
# brings NVIDIA's CUDA libraries); without them the tests that need them are skipped.
# Exit 77 (ctest SKIP) only when PyPI cannot be reached, saying so; any other failure fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build/release/apps/attndev/attndev}"
shift || true
venv=build/venv-py
base_python=$(command -v /usr/bin/python3 || command -v python3)
pip_quiet=(--quiet --disable-pip-version-check)

pypi_unreachable() {
  # The package index pip is configured with; a download of a small package is the test.
  local tmp
  tmp=$(mktemp -d)
  if "$venv/bin/python3" -m pip download "${pip_quiet[@]}" --no-deps --timeout 15 --retries 1 \
       -d "$tmp" pip >/dev/null 2>&1; then
    rm -rf "$tmp"
    return 1
  fi
  rm -rf "$tmp"
  return 0
}

install() {
  if ! "$@"; then
    if pypi_unreachable; then
      echo "test/python/run.sh: SKIPPED: PyPI cannot be reached; the Python package's tests need" \
           "numpy, pytest, scikit-build-core and nanobind from it" >&2
      exit 77
    fi
    echo "test/python/run.sh: FAILED: $* (PyPI is reachable: this is a real failure)" >&2
    exit 1
  fi
}

if [ ! -x "$venv/bin/python3" ]; then
  "$base_python" -m venv "$venv"
fi
install "$venv/bin/python3" -m pip install "${pip_quiet[@]}" numpy pytest
if [ "${ATTNDEV_PYTHON_TORCH:-0}" = 1 ]; then
  install "$venv/bin/python3" -m pip install "${pip_quiet[@]}" torch transformers
fi
start=$(date +%s)
install "$venv/bin/python3" -m pip install "${pip_quiet[@]}" .
echo "test/python/run.sh: pip install . took $(( $(date +%s) - start )) s" >&2
# Run from the tests' folder, not the repository root: `import attndev` must find the installed
# package, never python/attndev's sources (which lack the compiled module).
cd test/python
ATTNDEV_BIN="$(cd ../.. && realpath "$bin")" exec "../../$venv/bin/python3" -m pytest -q -p no:cacheprovider "$@"
