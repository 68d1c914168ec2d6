#!/usr/bin/env bash
# Set-up + every build + the whole test suite: what `.ci/run` runs on a clean clone. Each compiler
# compiles the sources once (docs/development.md, "Tests", has each step's measured time):
#   GCC 12    build/release: every target, CUDA (sm_80, sm_90) with GCC as nvcc's host compiler,
#             and the Python module in place; ctest runs everything in it (GPU tests SKIP without
#             a device); then `pip install .` as a packaging check, whose compiles the compiler
#             cache serves from this build's (same flags)
#   clang-19  build/clang: every target against the GPU node's dependency bundle, sm_90, warnings
#             as errors (scripts/clang-check.sh)
#   clang 14  build/sanitize: ASan + UBSan + libFuzzer coverage; the sanitizer suite
#             (scripts/sanitize.sh) and the fuzz targets (scripts/fuzz.sh) link from it
#   The two clang builds check, they do not ship: code the tests spend little time in compiles at
#   -O0 there (ATTNDEV_LIGHT_OPT, top-level CMakeLists.txt), the rest at the build's own level.
# At the end a table of each step's wall time; a run over 45 minutes is warned about (CI's limit
# is 90). Environment: ATTNDEV_JOBS (parallelism), ATTNDEV_SANITIZE_TESTS=0 and
# ATTNDEV_FUZZ_SECONDS=0 (leave those steps out of a quick local run), CCACHE_DISABLE=1 (compile
# without the cache).
# Usage: scripts/test.sh [ctest arguments]   with arguments: the GCC build and its ctest alone
set -euo pipefail
cd "$(dirname "$0")/.."
budget_s=$((45 * 60))

step_names=()
step_seconds=()
step_outcomes=()
step_cache=()
run_start=$SECONDS
# Each step's compiles as the compiler cache served them (hits/misses, from ccache's per-call log,
# so other builds on the machine do not count): a warm run whose builds miss has lost its cache
# key (an absolute path in a unit's text or command line, say: cmake/unity.cmake).
stats_dir=build/ccache-stats
rm -rf "$stats_dir"
mkdir -p "$stats_dir"
# step NAME COMMAND...: runs COMMAND as one step of the table; its failure ends the run (set -e).
step() {
  local name="$1" start=$SECONDS status=0 log
  shift
  echo "== test.sh: $name" >&2
  log="$stats_dir/${#step_names[@]}.log"
  CCACHE_STATSLOG="$PWD/$log" "$@" || status=$?
  step_names+=("$name")
  step_seconds+=($((SECONDS - start)))
  if [ -s "$log" ]; then
    step_cache+=("$(grep -Ec '^(direct|preprocessed)_cache_hit$' "$log" || :)/$(grep -c '^cache_miss$' "$log" || :)")
  else
    step_cache+=("")
  fi
  case "$status" in
    0) step_outcomes+=(ok) ;;
    77) step_outcomes+=("SKIPPED (exit 77)") ;;
    *) step_outcomes+=("FAILED (exit $status)") ;;
  esac
  return "$status"
}
skip_step() {  # skip_step NAME WHY
  step_names+=("$1")
  step_seconds+=(0)
  step_cache+=("")
  step_outcomes+=("left out: $2")
}
summary() {
  local status=$? total=$((SECONDS - run_start)) i
  {
    echo
    echo "test.sh: step times (wall clock, $(nproc) cores)"
    printf '  %-44s %8s %14s  %s\n' step seconds "cache hit/miss" outcome
    for i in "${!step_names[@]}"; do
      printf '  %-44s %8s %14s  %s\n' "${step_names[$i]}" "${step_seconds[$i]}" \
        "${step_cache[$i]}" "${step_outcomes[$i]}"
    done
    printf '  %-44s %8s %14s  %s\n' total "$total" "" \
      "$([ "$status" = 0 ] && echo passed || echo FAILED)"
    if [ "$total" -gt "$budget_s" ]; then
      echo "test.sh: WARNING: the run took $((total / 60)) min, over its budget of" \
           "$((budget_s / 60)) min (CI stops at 90): find the step that grew (docs/development.md)"
    fi
  } >&2
}
trap summary EXIT

step "set-up (scripts/setup.sh)" scripts/setup.sh
python=OFF
venv_status=0
step "python environment (scripts/python-venv.sh)" scripts/python-venv.sh >/dev/null ||
  venv_status=$?
# Only PyPI out of reach (77) lets the run go on: the module is then not built, and ctest's
# python_package entry says SKIPPED with the reason. Any other failure has ended the run.
if [ "$venv_status" = 0 ]; then
  python=ON
elif [ "$venv_status" != 77 ]; then
  exit "$venv_status"
fi
step "GCC 12 build (build/release)" env ATTNDEV_PYTHON=$python scripts/build.sh release
# --timeout: a hang guard for tests without their own TIMEOUT (the slowest takes seconds); a
# regression to quadratic work (plan expansion, duplicate checks) fails here instead of stalling CI.
step "GCC 12 ctest" ctest --test-dir build/release --output-on-failure --timeout 300 \
  -j "${ATTNDEV_JOBS:-$(nproc)}" "$@"
if [ $# -gt 0 ]; then
  echo "test.sh: ctest arguments given: the packaging check, the clang-19 + GPU bundle build," \
       "the sanitizer suite and fuzzing left out" >&2
  exit 0
fi

if [ "$python" = ON ]; then
  step "python packaging (pip install ., pytest)" test/python/run.sh --installed
else
  skip_step "python packaging (pip install ., pytest)" "PyPI cannot be reached"
fi
step "clang-19 + GPU bundle (scripts/clang-check.sh)" scripts/clang-check.sh
if [ "${ATTNDEV_SANITIZE_TESTS:-1}" != 0 ]; then
  step "clang 14 ASan+UBSan build (build/sanitize)" \
    bash -c 'cmake --preset sanitize >/dev/null && cmake --build --preset sanitize -j "${ATTNDEV_JOBS:-$(nproc)}"'
  step "sanitizer suite (scripts/sanitize.sh)" scripts/sanitize.sh
else
  skip_step "sanitizer suite (scripts/sanitize.sh)" "ATTNDEV_SANITIZE_TESTS=0"
fi
# Each libFuzzer target for a bounded time from its seed corpus (fuzz/seeds, configs/); a crash
# fails the suite and its input is kept under fuzz/seeds/ as a regression case. The gate that
# cannot be lost is ctest's fuzz_replay_* (every kept input, in every build, above); this step
# looks for new inputs, 30 s per target here (the two targets side by side), and for longer with
# `scripts/fuzz.sh SECONDS` by hand (docs/development.md, "Tests").
fuzz_seconds="${ATTNDEV_FUZZ_SECONDS:-30}"
if [ "$fuzz_seconds" != 0 ]; then
  step "fuzzing (scripts/fuzz.sh $fuzz_seconds)" scripts/fuzz.sh "$fuzz_seconds"
else
  skip_step "fuzzing (scripts/fuzz.sh)" "ATTNDEV_FUZZ_SECONDS=0"
fi
