#!/usr/bin/env bash
# Configures and builds attndev into build/<preset> (default: release). Used by run.sh and test.sh.
# Usage: scripts/build.sh [PRESET [TARGET...]]   (no target: everything, tests included)
#        ATTNDEV_CUDA=OFF  leave the CUDA backend out (run.sh does on a machine without a GPU);
#                          default ON: built whenever a CUDA toolkit is found
#        ATTNDEV_TESTS=OFF leave the tests out of the configuration (run.sh: running needs neither
#                          them nor Catch2); default ON
#        ATTNDEV_PYTHON=ON also build the Python module in place (build/<preset>/python), with the
#                          project's virtual environment (scripts/python-venv.sh); default OFF
#        Every compile goes through ccache when it is installed (CMakeLists.txt, ATTNDEV_CCACHE;
#        CCACHE_DISABLE=1 turns it off for one build).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
jobs="${ATTNDEV_JOBS:-$(nproc)}"
# Passed every time: the values are cached in the build folder, and a folder configured without
# CUDA or tests by run.sh must get them back when test.sh builds everything (the objects already
# built stay valid: neither option changes how a library is compiled).
python=(-DATTNDEV_PYTHON=OFF)
if [ "${ATTNDEV_PYTHON:-OFF}" = ON ]; then
  python=(-DATTNDEV_PYTHON=ON "-DPython_EXECUTABLE=$(scripts/python-venv.sh)")
fi
cmake --preset "$preset" -DATTNDEV_CUDA="${ATTNDEV_CUDA:-ON}" -DBUILD_TESTING="${ATTNDEV_TESTS:-ON}" \
  "${python[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
