#!/usr/bin/env bash
# CI's proof that a GPU node can build attndev from the working tree plus gpu-bundle/ alone:
#   1. scripts/gpu-bundle.sh writes the bundle (into the build folder);
#   2. configure with -DATTNDEV_BUNDLED_DEPS=ON and the system's package prefixes hidden from
#      find_package (CMAKE_IGNORE_PREFIX_PATH, no package registries);
#   3. build exactly what scripts/gpu-check.sh builds (target attndev_gpu_targets) for one
#      architecture (sm_90), Release, as the GPU node will;
#   4. check that every header any object was compiled from resolved inside the source tree, the
#      bundle, the CUDA toolkit or the compiler's and C library's own headers (ninja's dependency
#      log), that no binary links a system copy of a bundled library, and that the host-side
#      CUDA tests built this way pass.
# Exit 0 only when all of it held; without nvcc it fails (this is the only place the GPU build is
# tried before a GPU node is). Called by scripts/test.sh. Environment: ATTNDEV_JOBS.
set -euo pipefail
trap 'echo "ci-bundle-build: FAILED (line $LINENO: $BASH_COMMAND)" >&2' ERR
cd "$(dirname "$0")/.."
root="$PWD"
build=build/ci-bundle
bundle="$build/gpu-bundle"
jobs="${ATTNDEV_JOBS:-$(nproc)}"

die() {
  echo "ci-bundle-build: FAILED: $*" >&2
  exit 1
}

nvcc_bin="$(command -v nvcc || true)"
[[ -n "$nvcc_bin" || ! -x /usr/local/cuda/bin/nvcc ]] || nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -n "$nvcc_bin" ]] || die "no nvcc (on PATH or /usr/local/cuda/bin): the GPU build cannot be proven"
cuda_root="$(cd "$(dirname "$(readlink -f "$nvcc_bin")")/.." && pwd)"

mkdir -p "$build"
scripts/gpu-bundle.sh "$bundle"

start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DATTNDEV_BUNDLED_DEPS=ON "-DATTNDEV_BUNDLE_DIR=$root/$bundle" \
  "-DCMAKE_CUDA_COMPILER=$nvcc_bin" -DCMAKE_CUDA_ARCHITECTURES=90 -DATTNDEV_CUDA=ON \
  -DBUILD_TESTING=ON "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; die "configure"; }
grep -q "attndev: CUDA backend ON" "$build/configure.log" || die "the CUDA backend was not enabled"

# Every dependency package must have come from the bundle.
for pkg in CLI11 nlohmann_json spdlog Eigen3 Catch2; do
  dir="$(sed -n "s/^${pkg}_DIR:[A-Z]*=//p" "$build/CMakeCache.txt")"
  [[ "$(readlink -f "$dir")" == "$(readlink -f "$bundle")"/* ]] ||
    die "$pkg was found in '$dir', not in the bundle"
done

cmake --build "$build" -j "$jobs" --target attndev_gpu_targets
echo "ci-bundle-build: configure + build $((SECONDS - start)) s"

# Headers: each path ninja recorded must be inside an allowed root, or owned by one of the
# toolchain's own packages (compiler, C++ standard library, C library, kernel headers).
bundle_real="$(readlink -f "$bundle")"
# (ninja records paths relative to the build folder.)
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
  # Which package owns each? Allowed: the compiler's and the C library's.
  while IFS= read -r line; do
    pkg="${line%%: *}"
    file="${line#*: }"
    case "$pkg" in
      libc6-dev* | linux-libc-dev* | libstdc++-*-dev* | libgcc-*-dev* | gcc-*) ;;
      *) bad+=("$file ($pkg)") ;;
    esac
  done < <(dpkg -S "${outside[@]}" 2>&1 | sed 's/^dpkg-query: no path found matching pattern /(no package): /')
fi
if [[ ${#bad[@]} -gt 0 ]]; then
  printf '  %s\n' "${bad[@]}" >&2
  die "${#bad[@]} headers resolved outside the bundle, the tree, the toolkit and the toolchain"
fi
echo "ci-bundle-build: $(wc -l <"$build/headers.txt") headers, all inside the tree, the bundle," \
  "the CUDA toolkit or the toolchain (${#outside[@]} from the compiler and C library)"

# Binaries: no system copy of a bundled library may be linked.
while read -r kind name path; do
  [[ "$kind" == lib ]] && continue
  if readelf -d "$path" | grep -E 'NEEDED.*(fmt|spdlog|Catch2|CLI11)'; then
    die "$name links a system library that the bundle replaces"
  fi
done <"$build/gpu-check-targets.txt"

# The bundle-built host-side CUDA tests pass (cuda_gpu_kernels needs a device: left to
# scripts/gpu-check.sh, which treats its skip as a failure).
ctest --test-dir "$build" -L cuda -E '^cuda_gpu_kernels$' --no-tests=error -j "$jobs" \
  --output-on-failure >"$build/ctest.log" 2>&1 || { cat "$build/ctest.log"; die "host-side cuda tests"; }
grep -E "tests passed" "$build/ctest.log"
echo "ci-bundle-build: PASSED"
