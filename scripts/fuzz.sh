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
  name="${t#fuzz_}"
  corpus="fuzz/corpus-$name"  # what this machine found so far (ignored by git)
  mkdir -p "$corpus"
  # Read-only seed corpora: fuzz/seeds/<name>/ (regress-* are inputs that once crashed or were
  # reported hostile; ctest replays them in every build) and, for the config loader, the real
  # configs.
  seeds=()
  [ -d "fuzz/seeds/$name" ] && seeds+=("fuzz/seeds/$name")
  [ "$t" = fuzz_config ] && seeds+=(configs)
  echo "== $t: ${seconds}s"
  rm -f "build/fuzz/$t-"*
  # -timeout: one input taking > 10 s is a hang; -rss_limit_mb: runaway allocation is a bug;
  # -max_len: the regression seeds are up to 200 kB (nesting 100000 deep); mutating inputs that
  # large would slow the search, and ctest replays them whole.
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "build/fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -max_len=16384 -print_final_stats=1 -artifact_prefix="build/fuzz/$t-" \
      "$corpus" "${seeds[@]}"; then
    status=1
    echo "== $t: FAILED (a crash, hang, leak or sanitizer report above)"
    # Keep what it found as a regression case: ctest (fuzz_replay_<name>) replays it from now
    # on, so the bug cannot come back unnoticed once fixed.
    for a in "build/fuzz/$t-"*; do
      [ -f "$a" ] || continue
      kept="fuzz/seeds/$name/regress-$(basename "${a#build/fuzz/$t-}")"
      mkdir -p "fuzz/seeds/$name"
      cp "$a" "$kept"
      echo "== $t: input kept as $kept (reproduce: build/fuzz/fuzz/$t $kept);" \
           "fix the bug, then commit the input"
    done
  fi
done
exit $status
