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
# The GPU node's build from the working tree and the dependency bundle alone (docs/cuda.md): a
# separate build folder, sm_90 only, what scripts/gpu-check.sh builds.
if [ $# -eq 0 ]; then
  scripts/ci-bundle-build.sh
else
  echo "test.sh: ctest arguments given: scripts/ci-bundle-build.sh (the GPU node's build) left out" >&2
fi
