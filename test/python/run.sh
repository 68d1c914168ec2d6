#!/usr/bin/env bash
# The attndev Python package's tests (test/python, pytest) in the project's virtual environment
# (scripts/python-venv.sh: build/venv-py, packages from PyPI).
#
#   test/python/run.sh [pytest arguments...]
#       against the module built in place by the release build (build/release/python: the package's
#       sources of this tree beside the compiled _core), as ctest's python_package entry runs them;
#       builds the module and the CLI first (scripts/build.sh release _core attndev)
#   test/python/run.sh --installed [pytest arguments...]
#       the packaging check: `pip install --no-build-isolation .` into build/venv-py, then the same
#       tests against the installed package (PYTHONPATH unset). pip's build compiles with the
#       release build's flags, so the compiler cache serves every object it already compiled
#       (scripts/test.sh runs this after ctest).
#
# ATTNDEV_BIN: the CLI the tests compare with (default: the release build's). Exit 77 (SKIP) only
# when PyPI cannot be reached; any other failure fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
installed=0
if [ "${1:-}" = --installed ]; then
  installed=1
  shift
fi
py=$(scripts/python-venv.sh)  # exits 77 when PyPI cannot be reached
bin="${ATTNDEV_BIN:-$root/build/release/apps/attndev/attndev}"
if [ $installed = 1 ]; then
  start=$SECONDS
  echo "test/python/run.sh: pip install --no-build-isolation . (reuses cached objects when the" \
       "release build compiled them; a cold build takes minutes)" >&2
  # The release build's compiler by the same name: the compiler cache tells compilers apart by
  # the name they are called by, and pip's build would otherwise take Python's (x86_64-linux-gnu-g++
  # on Debian), so that none of the release build's objects would serve it.
  release_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/release/CMakeCache.txt 2>/dev/null || true)
  CXX="${release_cxx:-${CXX:-c++}}" \
    "$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation .
  echo "test/python/run.sh: pip install . took $((SECONDS - start)) s" >&2
  unset PYTHONPATH
else
  ATTNDEV_PYTHON=ON scripts/build.sh release _core attndev >&2
  export PYTHONPATH="$root/build/release/python"
fi
# From the tests' folder, not the root: `import attndev` must find the module under test, never
# python/attndev's sources (which lack the compiled module).
cd test/python
ATTNDEV_BIN="$(realpath "$bin")" exec "$py" -m pytest -q -p no:cacheprovider "$@"
