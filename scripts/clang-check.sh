#!/usr/bin/env bash
# The second compiler. GPU nodes build with g++ 13 or newer, whose C++20 rules (rewritten
# comparison operators, stricter template lookup) reject code that GCC 12 accepts; Debian 12's
# clang-19 implements the same rules, so CI catches such breaks here instead of on a GPU node.
#   1. every target (libraries, the app, tools, tests, and the host side of the CUDA code with
#      clang-19 as nvcc's host compiler, sm_90) in build/clang, warnings as errors
#      (CMakeLists.txt, ATTNDEV_WERROR); without -march=native, so it is also the portable build;
#   2. the unit tests of the numeric core in that build (rounding, the emulator, the measurement
#      path, metrics): a compiler that changed one rounding would fail them;
#   3. configs/quickstart.json through both binaries (GCC 12 -march=native from build/release, and
#      this one): every column of results.csv but the timings must be identical.
# Called by scripts/test.sh after the release suite (build/release must exist).
# Usage: scripts/clang-check.sh
set -euo pipefail
trap 'echo "clang-check: FAILED (line $LINENO: $BASH_COMMAND)" >&2' ERR
cd "$(dirname "$0")/.."
jobs="${ATTNDEV_JOBS:-$(nproc)}"
command -v clang++-19 >/dev/null || {
  echo "clang-check: clang++-19 not found: run scripts/setup.sh test" >&2
  exit 1
}
gcc_bin=build/release/apps/attndev/attndev
[[ -x "$gcc_bin" ]] || {
  echo "clang-check: $gcc_bin missing: build the release preset first (scripts/build.sh)" >&2
  exit 1
}

cmake --preset clang >/dev/null
cmake --build --preset clang -j "$jobs"

ctest --test-dir build/clang --output-on-failure --timeout 300 -j "$jobs" \
  -L '^(numerics|attention|measure|metrics|inputs)$'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for compiler in gcc clang; do
  bin=$gcc_bin
  [[ $compiler == clang ]] && bin=build/clang/apps/attndev/attndev
  "$bin" -q run configs/quickstart.json -o "$work/$compiler" >/dev/null
done
python3 - "$work/gcc/results.csv" "$work/clang/results.csv" <<'PY'
import csv, sys
timing = {"runtime_ms", "gflops", "tflops"}
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
if len(a) != len(b) or not a or list(a[0]) != list(b[0]):
    sys.exit(f"clang-check: results.csv differ in shape: {len(a)} vs {len(b)} rows")
bad = [(i, k, x[k], y[k]) for i, (x, y) in enumerate(zip(a, b)) for k in x
       if k not in timing and x[k] != y[k]]
for i, k, u, v in bad[:10]:
    print(f"clang-check: row {i} {k}: gcc {u} clang {v}", file=sys.stderr)
if bad:
    sys.exit(f"clang-check: {len(bad)} cells differ between the GCC and clang builds")
print(f"clang-check: quickstart identical under GCC 12 and clang 19 ({len(a)} rows)")
PY
echo "clang-check: PASSED"
