#!/usr/bin/env bash
# Set-up + configure + build + the whole test suite. `.ci/run` calls this.
# GPU tests report SKIPPED (not passed) on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
# --timeout: a hang guard for tests without their own TIMEOUT (the slowest takes seconds); a
# regression to quadratic work (plan expansion, duplicate checks) fails here instead of stalling CI.
ctest --test-dir build/release --output-on-failure --timeout 300 -j "${ATTNDEV_JOBS:-$(nproc)}" "$@"
