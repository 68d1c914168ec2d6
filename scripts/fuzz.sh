#!/usr/bin/env bash
# Runs each libFuzzer target (fuzz/fuzz_*.cpp) for a bounded time. Fails on any crash, hang
# (per-input timeout), leak or sanitizer report. The targets link the objects of the sanitizer
# build (preset "sanitize": clang 14, ASan + UBSan, libFuzzer coverage in every library), the one
# build scripts/sanitize.sh runs its suite in: configured and built here if needed.
# Usage: scripts/fuzz.sh [seconds per target, default 60] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
jobs="${ATTNDEV_JOBS:-$(nproc)}"

build=build/sanitize
cmake --preset sanitize >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in fuzz/fuzz_*.cpp; do targets+=("$(basename "${src%.cpp}")"); done
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

# fuzz_one TARGET: one target for the bounded time, its output to $build/TARGET.log; on a failure
# the input is kept as a regression case: ctest (fuzz_replay_<name>) replays it from now on, so
# the bug cannot come back unnoticed once fixed.
fuzz_one() {
  local t="$1" name="${1#fuzz_}" a kept
  local corpus="fuzz/corpus-$name"  # what this machine found so far (ignored by git)
  mkdir -p "$corpus"
  # Read-only seed corpora: fuzz/seeds/<name>/ (regress-* are inputs that once crashed or were
  # reported hostile; ctest replays them in every build) and, for the config loader, the real
  # configs.
  local seeds=()
  [ -d "fuzz/seeds/$name" ] && seeds+=("fuzz/seeds/$name")
  [ "$t" = fuzz_config ] && seeds+=(configs)
  rm -f "$build/$t-"*
  # -timeout: one input taking > 10 s is a hang; -rss_limit_mb: runaway allocation is a bug;
  # -max_len: the regression seeds are up to 200 kB (nesting 100000 deep); mutating inputs that
  # large would slow the search, and ctest replays them whole.
  if UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -max_len=16384 -print_final_stats=1 -artifact_prefix="$build/$t-" \
      "$corpus" "${seeds[@]}" >"$build/$t.log" 2>&1; then
    echo "== $t: passed ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/$t.log" |
      grep -o '[0-9]*$') inputs in ${seconds}s)"
    return 0
  fi
  tail -n 60 "$build/$t.log"
  echo "== $t: FAILED (a crash, hang, leak or sanitizer report above; whole log $build/$t.log)"
  for a in "$build/$t-"*; do
    [ -f "$a" ] || continue
    kept="fuzz/seeds/$name/regress-$(basename "${a#"$build/$t-"}")"
    mkdir -p "fuzz/seeds/$name"
    cp "$a" "$kept"
    echo "== $t: input kept as $kept (reproduce: $build/fuzz/$t $kept);" \
         "fix the bug, then commit the input"
  done
  return 1
}

# The targets run side by side, up to ATTNDEV_JOBS at a time: each is one process on one core for a
# fixed time, so two cores fuzz two targets in the time of one.
status=0
pids=()
for t in "${targets[@]}"; do
  echo "== $t: ${seconds}s"
  fuzz_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
