#!/usr/bin/env bash
# The sanitizer suite: tests under AddressSanitizer + UndefinedBehaviorSanitizer in the one clang 14
# build (preset "sanitize": -O1 -g, no CUDA, libFuzzer coverage so that scripts/fuzz.sh links its
# targets from the same objects). Any report fails the test that caused it (UBSan does not recover:
# -fno-sanitize-recover in CMakeLists.txt; ASan aborts). scripts/test.sh calls this after the GCC
# and clang-19 builds (docs/development.md, "Tests").
# Usage: scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${ATTNDEV_JOBS:-$(nproc)}"

cmake --preset sanitize >/dev/null
# Everything the chosen tests need, and the fuzz targets: the libraries, the test executables, the
# fuzz replays and the attndev binary that the cli tests run (sanitized too, so hostile input
# through the command line is checked as well).
cmake --build --preset sanitize -j "$jobs"

# What runs here is chosen by what the sanitizers can find that the GCC build's run cannot:
# memory and undefined behaviour in code that reads untrusted input or manages memory and
# processes. The randomized numeric tests run at the smoke scale (test/test_scale.hpp): their full
# counts run in the GCC build, and a sanitizer finds an out-of-bounds index or an overflowing shift
# on the first case that reaches it. The same scale trims sweeps that repeat one code path with
# other values (docs/development.md, "Tests", lists them): the round-boundary sweep takes each
# binade's edges, the kernel reference two of its four causal/scale variants, the mask tests two
# trials per policy, the device golden and the fa2-cuda twin one input format; the flash2-tc
# host-simulator tests run one shape through every kernel of the table, and the twin's
# per-profile comparison under sm90 alone (sm80's kernel and twin paths run in its negative
# controls; the bits of both profiles are compared in the GCC build). Left out, each run in the
# GCC build:
#   papers     whole paper sweeps (minutes at -O1 with ASan), through the same runner code that
#              the cli and experiment tests run;
#   slurm      a real one-node SLURM cluster (daemons, queue waits), the runner as above;
#   gpu        CUDA is off in this build;
#   gpu_check  a shell script with a fake nvidia-smi: no attndev code under test;
#   python     the pytest suite through the GCC build's module (a sanitized module would need the
#              sanitizer runtime preloaded into the interpreter);
#   plot       matplotlib drawing a figure (the pivot it draws is tested under label cli).
# and by name: tests whose job is a size or a count, not memory (their code runs here on small
# inputs in other tests):
#   the plan-expansion and duplicate-check scaling tests (a million points: a regression to
#   quadratic work), the weight study end to end (`train --quick`: minutes at -O1 with ASan; the
#   layers, the backward and short training runs are tested here), and test_registration (that
#   every Catch2 case has a ctest entry: a property of the build files, not of the code).
exclude_labels='papers|slurm|gpu|gpu_check|python|plot'
exclude_names='a plan of a million axis combinations|one long axis and a long list of seeds|'\
'attndev train --quick runs the weight study end to end|^test_registration$'
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
ctest --test-dir build/sanitize --output-on-failure --timeout 600 -j "$jobs" \
  -LE "$exclude_labels" -E "$exclude_names" "$@"
