#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (preset "sanitize": gcc,
# -O1 -g, no CUDA): out-of-bounds reads in the safetensors/npy readers, overflows in size
# arithmetic, use-after-free in the runner. Any sanitizer report fails the test that caused it
# (UBSan does not recover: -fno-sanitize-recover in CMakeLists.txt; ASan aborts).
# scripts/test.sh calls this after the release suite (README.md, "Tests").
# Usage: scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${ATTNDEV_JOBS:-$(nproc)}"

cmake --preset sanitize >/dev/null
# Everything the tests need: the libraries, the test executables, the fuzz replays and the
# attndev binary that the cli tests run (built with the sanitizers too, so hostile input through
# the command line is checked as well).
cmake --build --preset sanitize -j "$jobs"

# Left out under the sanitizers, each run by scripts/test.sh in the release build:
#   papers     whole paper sweeps (minutes at -O1 with ASan), through the same runner code that
#              the cli and experiment tests run;
#   slurm      a real one-node SLURM cluster (daemons, queue waits), the runner as above;
#   gpu        CUDA is off in this build (the host-side CUDA tests, label cuda, do run);
#   gpu_check  a shell script with a fake nvidia-smi: no attndev code under test;
#   python     the Python package's suite: pip builds its own (unsanitized) extension module, so
#              a second run here would check nothing new.
exclude_labels='papers|slurm|gpu|gpu_check|python'
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
ctest --test-dir build/sanitize --output-on-failure --timeout 600 -j "$jobs" \
  -LE "$exclude_labels" "$@"
