#!/usr/bin/env bash
# Configures and builds attndev into build/<preset> (default: release). Used by run.sh and test.sh.
# Usage: scripts/build.sh [PRESET [TARGET...]]   (no target: everything, tests included)
#        ATTNDEV_CUDA=OFF  leave the CUDA backend out (run.sh does on a machine without a GPU);
#                          default ON: built whenever a CUDA toolkit is found
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
jobs="${ATTNDEV_JOBS:-$(nproc)}"
# Passed every time: the value is cached in the build folder, and a folder configured without
# CUDA by run.sh must get it back when test.sh builds everything.
cmake --preset "$preset" -DATTNDEV_CUDA="${ATTNDEV_CUDA:-ON}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
