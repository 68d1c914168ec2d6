#!/usr/bin/env bash
# Set-up (only what running needs) + Release build of the attndev binary alone + the default
# experiment (configs/quickstart.json, or the config given). scripts/test.sh sets up and builds
# the rest (tests, fuzzing, SLURM).
# Usage: scripts/run.sh [CONFIG.json] [more attndev run options]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh run
scripts/build.sh release attndev
config="${1:-configs/quickstart.json}"
shift || true
exec build/release/apps/attndev/attndev run "$config" "$@"
