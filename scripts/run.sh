#!/usr/bin/env bash
# Set-up (only what running needs) + Release build of the attndev binary alone + the default
# experiment (configs/quickstart.json, or the config given). scripts/test.sh sets up and builds
# the rest (tests, fuzzing, SLURM).
# Usage: scripts/run.sh [CONFIG.json] [more attndev run options]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh run
# Without a GPU the CUDA kernels could not run: leave them out (nvcc's share of the build is the
# larger one). scripts/test.sh builds them whenever the toolkit is there.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  cuda=ON
else
  cuda=OFF
  echo "run.sh: no GPU visible (nvidia-smi -L): building without the CUDA backend" >&2
fi
ATTNDEV_CUDA=$cuda ATTNDEV_TESTS=OFF scripts/build.sh release attndev
config="${1:-configs/quickstart.json}"
shift || true
exec build/release/apps/attndev/attndev run "$config" "$@"
