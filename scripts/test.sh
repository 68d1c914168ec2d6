#!/usr/bin/env bash
# Set-up + configure + build + the whole test suite. `.ci/run` calls this.
# GPU tests report SKIPPED (not passed) on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
ctest --test-dir build/release --output-on-failure -j "${ATTNDEV_JOBS:-$(nproc)}" "$@"
