#!/usr/bin/env bash
# Set-up (only what running needs) + Release build of the attndev binary alone + the default
# experiment (configs/quickstart.json, or the config given). scripts/test.sh sets up and builds
# the rest (tests, fuzzing, SLURM).
# Two binaries: build/release (-march=native: the emulator's AVX-512 paths where this CPU has
# them, up to 3x faster) runs the experiment; build/portable (-march=x86-64-v3, any x86 server
# since about 2015, the same results) is built after it, and `attndev slurm` run from
# build/release gives it to the jobs (docs/slurm.md). Where nothing is cached the second build
# costs as much as the first (docs/development.md); ATTNDEV_PORTABLE=OFF leaves it out.
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
status=0
build/release/apps/attndev/attndev run "$config" "$@" || status=$?
# After the run, so that its results come as soon as before. The same CUDA setting: a GPU
# sweep's jobs need the backend as much as this binary does. A failed run still gets it, an
# interrupted one (75: Ctrl-C) does not; the exit status is the run's.
if [ "${ATTNDEV_PORTABLE:-ON}" != OFF ] && [ "$status" -ne 75 ]; then
  echo "run.sh: building the portable attndev for SLURM jobs (build/portable, -march=x86-64-v3;" \
    "a few minutes the first time, ATTNDEV_PORTABLE=OFF skips it)" >&2
  ATTNDEV_CUDA=$cuda ATTNDEV_TESTS=OFF scripts/build.sh portable attndev
fi
exit "$status"
