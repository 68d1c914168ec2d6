#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, preset "fuzz") and runs each fuzz/fuzz_*.cpp target for a
# bounded time. Fails on any crash, hang (per-input timeout), leak or sanitizer report.
# Usage: scripts/fuzz.sh [seconds per target, default 60] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
jobs="${ATTNDEV_JOBS:-$(nproc)}"

# The libraries are instrumented too (fuzzer-no-link), or the fuzzer would be blind to coverage
# inside the config loader and the tensor readers.
cmake --preset fuzz -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in fuzz/fuzz_*.cpp; do targets+=("$(basename "${src%.cpp}")"); done
fi
cmake --build build/fuzz -j "$jobs" --target "${targets[@]}"

status=0
for t in "${targets[@]}"; do
  corpus="fuzz/corpus-${t#fuzz_}"
  mkdir -p "$corpus"
  # Seeds: real configs for the config loader; fuzz/seeds/<name>/ for any target that has them.
  if [ "$t" = fuzz_config ]; then
    cp -n configs/*.json configs/examples/*.json "$corpus"/ 2>/dev/null || true
  fi
  seeds=()
  [ -d "fuzz/seeds/${t#fuzz_}" ] && seeds=("fuzz/seeds/${t#fuzz_}")
  echo "== $t: ${seconds}s"
  # -timeout: one input taking > 10 s is a hang; -rss_limit_mb: runaway allocation is a bug.
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "build/fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -print_final_stats=1 -artifact_prefix="build/fuzz/$t-" "$corpus" "${seeds[@]}"; then
    echo "== $t: FAILED (artifacts: build/fuzz/$t-*)"
    status=1
  fi
done
exit $status
