#!/usr/bin/env bash
# The second compiler, and the GPU node's build, in one build (build/clang):
#   clang-19  GPU nodes build with g++ 13 or newer, whose C++20 rules (rewritten comparison
#             operators, stricter template lookup) reject code GCC 12 accepts; Debian 12's
#             clang-19 implements the same rules, so CI catches such breaks here. Every target,
#             warnings as errors (CMakeLists.txt, ATTNDEV_WERROR), clang++-19 also as nvcc's host
#             compiler, sm_90, without -march=native (so this is also the portable build).
#   bundle    a GPU node has no Debian packages and no network: it builds from the working tree
#             plus the header-only dependency bundle of scripts/gpu-bundle.sh (docs/cuda.md). This
#             build uses the bundle alone, the system's package prefixes hidden from find_package,
#             and checks that every header any object was compiled from resolved inside the tree,
#             the bundle, the CUDA toolkit or the compiler's and C library's own headers (ninja's
#             dependency log), and that no binary links a system copy of a bundled library.
# Then, in that build: the numeric core's unit tests and the host-side CUDA tests (at the smoke
# scale of test/test_scale.hpp: this build exists to find compiler and dependency faults, the
# GCC build runs the full counts), and configs/quickstart.json through both binaries (GCC 12
# -march=native from build/release, and this one): every column of results.csv but the timings
# must be identical. Called by scripts/test.sh after the GCC build (build/release must exist).
# Without clang++-19 or nvcc it fails: this is the only place either is tried before a GPU node.
# Usage: scripts/clang-check.sh        Environment: ATTNDEV_JOBS.
set -euo pipefail
trap 'echo "clang-check: FAILED (line $LINENO: $BASH_COMMAND)" >&2' ERR
cd "$(dirname "$0")/.."
root="$PWD"
build=build/clang
bundle="$build/gpu-bundle"
jobs="${ATTNDEV_JOBS:-$(nproc)}"

die() {
  echo "clang-check: FAILED: $*" >&2
  exit 1
}

command -v clang++-19 >/dev/null || die "clang++-19 not found: run scripts/setup.sh test"
gcc_bin=build/release/apps/attndev/attndev
[[ -x "$gcc_bin" ]] || die "$gcc_bin missing: build the release preset first (scripts/build.sh)"
nvcc_bin="$(command -v nvcc || true)"
[[ -n "$nvcc_bin" || ! -x /usr/local/cuda/bin/nvcc ]] || nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -n "$nvcc_bin" ]] || die "no nvcc (on PATH or /usr/local/cuda/bin): the GPU build cannot be proven"
cuda_root="$(cd "$(dirname "$(readlink -f "$nvcc_bin")")/.." && pwd)"

mkdir -p "$build"
scripts/gpu-bundle.sh "$bundle" >/dev/null

# The preset "clang" (clang++-19, sm_90, no -march=native, smoke scale) with the bundle alone.
cmake --preset clang -DATTNDEV_BUNDLED_DEPS=ON "-DATTNDEV_BUNDLE_DIR=$root/$bundle" \
  "-DCMAKE_CUDA_COMPILER=$nvcc_bin" -DATTNDEV_CUDA=ON -DBUILD_TESTING=ON \
  "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; die "configure"; }
grep -q "attndev: CUDA backend ON" "$build/configure.log" || die "the CUDA backend was not enabled"
for pkg in CLI11 nlohmann_json spdlog Eigen3 Catch2; do
  dir="$(sed -n "s/^${pkg}_DIR:[A-Z]*=//p" "$build/CMakeCache.txt")"
  [[ "$(readlink -f "$dir")" == "$(readlink -f "$bundle")"/* ]] ||
    die "$pkg was found in '$dir', not in the bundle"
done

cmake --build --preset clang -j "$jobs"

# Headers: each path ninja recorded must be inside an allowed root, or owned by one of the
# toolchain's own packages (compiler, C++ standard library, C library, kernel headers).
bundle_real="$(readlink -f "$bundle")"
(cd "$build" && ninja -t deps | awk '/^    / { print $1 }' | sort -u | xargs -d '\n' realpath -e) |
  sort -u >"$build/headers.txt"
[[ -s "$build/headers.txt" ]] || die "ninja recorded no header dependencies"
outside=()
while IFS= read -r f; do
  case "$f" in
    "$bundle_real"/*) ;;
    "$root"/*) [[ "$f" != "$root"/build/* || "$f" == "$(readlink -f "$build")"/* ]] ||
      outside+=("$f") ;;
    "$cuda_root"/*) ;;
    *) outside+=("$f") ;;
  esac
done <"$build/headers.txt"
bad=()
if [[ ${#outside[@]} -gt 0 ]]; then
  while IFS= read -r line; do
    pkg="${line%%: *}"
    file="${line#*: }"
    case "$pkg" in
      libc6-dev* | linux-libc-dev* | libstdc++-*-dev* | libgcc-*-dev* | gcc-* | libclang-common-19-dev* | \
        clang-19* | libllvm19*) ;;
      *) bad+=("$file ($pkg)") ;;
    esac
  done < <(dpkg -S "${outside[@]}" 2>&1 | sed 's/^dpkg-query: no path found matching pattern /(no package): /')
fi
if [[ ${#bad[@]} -gt 0 ]]; then
  printf '  %s\n' "${bad[@]}" >&2
  die "${#bad[@]} headers resolved outside the bundle, the tree, the toolkit and the toolchain"
fi
echo "clang-check: $(wc -l <"$build/headers.txt") headers, all inside the tree, the bundle," \
  "the CUDA toolkit or the toolchain (${#outside[@]} from the compiler and C library)"

# Binaries: no system copy of a bundled library may be linked.
while read -r kind name path; do
  [[ "$kind" == lib ]] && continue
  if readelf -d "$path" | grep -E 'NEEDED.*(fmt|spdlog|Catch2|CLI11)'; then
    die "$name links a system library that the bundle replaces"
  fi
done <"$build/gpu-check-targets.txt"

# The numeric core and the host-side CUDA tests (cuda_gpu_kernels needs a device).
ctest --test-dir "$build" --output-on-failure --timeout 300 -j "$jobs" --no-tests=error \
  -L '^(numerics|attention|measure|metrics|inputs|cuda)$' -E '^cuda_gpu_kernels$'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for compiler in gcc clang; do
  bin=$gcc_bin
  [[ $compiler == clang ]] && bin=$build/apps/attndev/attndev
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
