#!/usr/bin/env bash
# Configures and builds attndev into build/<preset> (default: release). Used by run.sh and test.sh.
# Usage: scripts/build.sh [PRESET [TARGET...]]   (no target: everything, tests included)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
jobs="${ATTNDEV_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
