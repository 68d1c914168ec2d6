#!/usr/bin/env bash
# Configures and builds attndev into build/<preset> (default: release). Used by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
jobs="${ATTNDEV_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
