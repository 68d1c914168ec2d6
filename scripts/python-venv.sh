#!/usr/bin/env bash
# The project's own Python for building and testing the Python package: prints the path of
# build/venv-py/bin/python3, creating or completing that virtual environment from PyPI (never the
# system's Python): numpy and pytest (the tests), nanobind and scikit-build-core (what builds the
# extension module: in place in the release build, and `pip install --no-build-isolation .`).
#
#   scripts/python-venv.sh           ATTNDEV_PYTHON_TORCH=1 also installs torch and transformers
#                                    (about 5 GiB: PyPI's torch brings NVIDIA's CUDA libraries)
#
# Exit 0: the path on stdout. Exit 77: PyPI cannot be reached (scripts/test.sh then builds without
# the module, and ctest's python_package says SKIPPED with this reason). Exit 1: anything else.
# Messages go to stderr. Debian's python3 with python3-venv and python3-dev (scripts/setup.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/build/venv-py"
py="$venv/bin/python3"
pip_quiet=(--quiet --disable-pip-version-check)
packages=(numpy pytest 'nanobind>=2.0' 'scikit-build-core>=0.10')
[ "${ATTNDEV_PYTHON_TORCH:-0}" = 1 ] && packages+=(torch transformers)
# The marker holds the package list and is written last: an interrupted install leaves a stale
# or no marker, and the next run installs again rather than use a half-made environment.
ready="$venv/.attndev-ready"
want="${packages[*]}"
if [ -f "$ready" ] && [ "$(cat "$ready")" = "$want" ] && [ -x "$py" ]; then
  echo "$py"
  exit 0
fi

base=$(command -v /usr/bin/python3 || command -v python3 || true)
[ -n "$base" ] || { echo "python-venv.sh: no python3: run scripts/setup.sh" >&2; exit 1; }
if [ ! -x "$py" ]; then
  "$base" -m venv "$venv" >&2 || {
    rm -rf "$venv"
    echo "python-venv.sh: '$base -m venv $venv' failed: install python3-venv (scripts/setup.sh)" >&2
    exit 1
  }
fi
echo "python-venv.sh: installing ${packages[*]} from PyPI into $venv" >&2
if ! "$py" -m pip install "${pip_quiet[@]}" "${packages[@]}" >&2; then
  tmp=$(mktemp -d)
  if ! "$py" -m pip download "${pip_quiet[@]}" --no-deps --timeout 15 --retries 1 -d "$tmp" pip \
       >/dev/null 2>&1; then
    rm -rf "$tmp"
    echo "python-venv.sh: PyPI cannot be reached: the Python package cannot be built or tested" \
         "(set pip's proxy or index, PIP_INDEX_URL, and run again)" >&2
    exit 77
  fi
  rm -rf "$tmp"
  echo "python-venv.sh: pip failed although PyPI is reachable (see pip's message above)" >&2
  exit 1
fi
echo "$want" >"$ready"
echo "$py"
