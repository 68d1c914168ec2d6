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
  # The second compiler: every target with clang-19 (the C++20 rules of the GPU nodes' g++ 13),
  # warnings as errors, the numeric core's unit tests, and the quickstart's numbers identical to
  # the GCC build's (scripts/clang-check.sh says why).
  scripts/clang-check.sh
  # The unit tests under ASan + UBSan (a second, separate build; its cost on CI's 2 cores is in
  # README.md, "Tests"). ATTNDEV_SANITIZE_TESTS=0 leaves it out (a quick local run).
  if [ "${ATTNDEV_SANITIZE_TESTS:-1}" != 0 ]; then
    scripts/sanitize.sh
  else
    echo "test.sh: ATTNDEV_SANITIZE_TESTS=0: scripts/sanitize.sh left out" >&2
  fi
  # Each libFuzzer target for a bounded time from its seed corpus (fuzz/seeds, configs/); a crash
  # fails the suite and its input is kept under fuzz/seeds/ as a regression case (ctest's
  # fuzz_replay_* replay every kept input in every build). ATTNDEV_FUZZ_SECONDS=0 leaves it out.
  fuzz_seconds="${ATTNDEV_FUZZ_SECONDS:-60}"
  if [ "$fuzz_seconds" != 0 ]; then
    scripts/fuzz.sh "$fuzz_seconds"
  else
    echo "test.sh: ATTNDEV_FUZZ_SECONDS=0: scripts/fuzz.sh left out" >&2
  fi
else
  echo "test.sh: ctest arguments given: scripts/ci-bundle-build.sh (the GPU node's build)," \
       "scripts/clang-check.sh, scripts/sanitize.sh and scripts/fuzz.sh left out" >&2
fi
