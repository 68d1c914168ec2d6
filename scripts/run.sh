#!/usr/bin/env bash
# Set-up + Release build + the default experiment (configs/quickstart.json, or the config given).
# Usage: scripts/run.sh [CONFIG.json] [more attndev run options]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
config="${1:-configs/quickstart.json}"
shift || true
exec build/release/apps/attndev/attndev run "$config" "$@"
