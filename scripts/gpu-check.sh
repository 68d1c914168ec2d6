#!/usr/bin/env bash
# GPU acceptance in one command, for a machine with an NVIDIA GPU (sm_80 or newer), sized for
# about 5 minutes on one H100/H200 including the build:
#   0. prerequisites (all checked first, every missing one named) and the device: nvidia-smi must
#      answer, its compute capability must be one (it becomes CMAKE_CUDA_ARCHITECTURES), the
#      driver must run this toolkit's CUDA major version;
#   1. configure + build the target `attndev_gpu_targets` (test/cuda/extra.cmake: every CUDA test
#      executable, the check tool, attndev) for this GPU's architecture only, with the dependency
#      bundle of scripts/gpu-bundle.sh when it is present (the configuration CI builds);
#   2. ctest -L cuda: every CUDA test executable must have entries and every entry must pass
#      (a skipped test is a failure here: this script exists to run them);
#   3. sweep: faithful flash1/flash2 vs the CPU emulator bit for bit on 24 random points, and
#      flash2-tc vs the golden (2x baseline + floor) at bf16 and fp16;
#   4. attndev point with --backend cpu and --backend cuda on the same point, and flash2-tc;
#   5. throughput: flash2-tc bf16 at B=4 H=16 N=8192 d=128 vs cuBLAS's dense bf16 GEMM rate
#      measured in the same run (goal: at least 0.5; reported, not a pass/fail criterion);
#   6. PyTorch's CUDA backends (FLASH_ATTENTION, EFFICIENT, CUDNN, MATH) as external variants
#      beside attndev's emulated twins and CUDA kernels (configs/validation/torch-cuda.json);
#   7. registers and spills of every kernel as built (cuobjdump).
# Every table it prints is also written to OUT_DIR, with the logs and summary.txt. Exit status 0
# only when every step passed; otherwise non-zero, and the summary names the failed steps.
#
# Usage: scripts/gpu-check.sh [options] OUT_DIR
#   --build-dir DIR  build folder (default build/gpu-check)
#   --reuse-build    neither configure nor build: use --build-dir as it is
#   --no-torch       leave out step 6 (otherwise a python3 without CUDA PyTorch is a failure)
#   -j N             build parallelism (default: the number of CPUs)
# Environment: CUDA_ARCH (e.g. 90) instead of the detected architecture; CUDA_HOME (toolkit
# root; default: nvcc on PATH, else /usr/local/cuda).
set -uo pipefail
cd "$(dirname "$0")/.."
readonly kExitUsage=2 kExitPrereq=3 kExitDevice=4 kExitFailed=1

usage() {
  sed -n '/^# Usage:/,/^# Environment/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit "$kExitUsage"
}

build=build/gpu-check
reuse=0
torch=1
jobs="$(nproc 2>/dev/null || echo 4)"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || usage; build="$2"; shift 2 ;;
    --reuse-build) reuse=1; shift ;;
    --no-torch) torch=0; shift ;;
    -j) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; jobs="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu-check.sh: unknown option $1" >&2; usage ;;
    *) [[ -z "$out" ]] || { echo "gpu-check.sh: one OUT_DIR only" >&2; usage; }; out="$1"; shift ;;
  esac
done
if [[ -z "$out" ]]; then
  echo "gpu-check.sh: missing OUT_DIR (the folder every table and log is written to)" >&2
  usage
fi
mkdir -p "$out" || { echo "gpu-check.sh: cannot create $out" >&2; exit "$kExitUsage"; }
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: >"$summary"

say() { echo "$*" | tee -a "$summary"; }
fail_early() {  # fail_early EXIT_CODE LINES...: before any step ran
  local code="$1"; shift
  for line in "$@"; do say "gpu-check: $line"; done
  say "gpu-check: FAILED before building anything (exit $code)"
  exit "$code"
}

# ---- 0a. prerequisites: everything checked, everything missing named at once ----
missing=()
cmake_bin="$(command -v cmake || true)"
ctest_bin="$(command -v ctest || true)"
if [[ -z "$cmake_bin" || -z "$ctest_bin" ]]; then
  missing+=("cmake and ctest (3.20 or newer) on PATH")
else
  cmake_version="$("$cmake_bin" --version | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p')"
  if ! printf '3.20\n%s\n' "$cmake_version" | sort -V -C; then
    missing+=("cmake 3.20 or newer (found ${cmake_version:-an unreadable version})")
  fi
fi
if [[ $reuse -eq 0 ]]; then
  command -v ninja >/dev/null || missing+=("ninja on PATH")
  if [[ -n "${CXX:-}" ]]; then
    command -v "${CXX%% *}" >/dev/null || missing+=("the C++ compiler CXX=$CXX")
  elif ! command -v c++ >/dev/null && ! command -v g++ >/dev/null; then
    missing+=("a C++20 host compiler (c++ or g++ on PATH, or CXX)")
  fi
fi
nvcc_bin=""
if [[ -n "${CUDA_HOME:-}" ]]; then
  [[ -x "$CUDA_HOME/bin/nvcc" ]] && nvcc_bin="$CUDA_HOME/bin/nvcc"
elif command -v nvcc >/dev/null; then
  nvcc_bin="$(command -v nvcc)"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc_bin=/usr/local/cuda/bin/nvcc
fi
if [[ -z "$nvcc_bin" && -n "${CUDA_HOME:-}" ]]; then
  missing+=("nvcc: CUDA_HOME=$CUDA_HOME has no bin/nvcc")
elif [[ -z "$nvcc_bin" ]]; then
  missing+=("nvcc (on PATH or in /usr/local/cuda/bin; or set CUDA_HOME to the toolkit's root)")
fi
command -v nvidia-smi >/dev/null || missing+=("nvidia-smi on PATH (the NVIDIA driver's tool)")
python_ok=0
if command -v python3 >/dev/null; then
  python_ok=1
else
  missing+=("python3 on PATH")
fi
if [[ $torch -eq 1 && $python_ok -eq 1 ]]; then
  if ! torch_why="$(python3 -c '
import sys
try:
    import torch
except Exception as e:
    sys.exit("import torch failed: %s" % e)
if not torch.cuda.is_available():
    sys.exit("torch %s: torch.cuda.is_available() is False (a CPU-only build, or no device)" % torch.__version__)
' 2>&1)"; then
    missing+=("python3 with CUDA PyTorch ($(echo "$torch_why" | tail -n1); or pass --no-torch)")
  fi
fi
if [[ $reuse -eq 1 ]]; then
  [[ -f "$build/gpu-check-targets.txt" ]] ||
    missing+=("$build/gpu-check-targets.txt (--reuse-build needs a configured and built CUDA build)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  lines=("missing prerequisites:")
  for m in "${missing[@]}"; do lines+=("  - $m"); done
  fail_early "$kExitPrereq" "${lines[@]}"
fi

# ---- 0b. the device and the driver ----
# An nvidia-smi failure prints its error on stdout; nothing of it may reach the architecture.
smi_out="$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1)"
smi_rc=$?
if [[ $smi_rc -ne 0 ]]; then
  fail_early "$kExitDevice" "nvidia-smi failed (exit $smi_rc): no usable GPU or driver:" \
    "  $(echo "$smi_out" | head -n3 | tr '\n' ' ')"
fi
first_gpu="$(echo "$smi_out" | head -n1)"
gpu_name="$(echo "$first_gpu" | cut -d, -f1 | sed 's/^ *//;s/ *$//')"
compute_cap="$(echo "$first_gpu" | cut -d, -f2 | tr -d ' ')"
driver_version="$(echo "$first_gpu" | cut -d, -f3 | tr -d ' ')"
if [[ ! "$compute_cap" =~ ^[0-9]+\.[0-9]+$ ]]; then
  fail_early "$kExitDevice" "nvidia-smi gave no compute capability for the first GPU: '$first_gpu' (expected 'NAME, MAJOR.MINOR, DRIVER'; is the driver older than 510?)"
fi
detected_arch="${compute_cap/./}"
arch="${CUDA_ARCH:-$detected_arch}"
if [[ ! "$arch" =~ ^[0-9]{2,3}$ ]]; then
  fail_early "$kExitDevice" "CUDA_ARCH='$arch' is not one architecture number such as 80 or 90"
fi
if [[ $arch -lt 80 ]]; then
  fail_early "$kExitDevice" "sm_$arch ($gpu_name): attndev's CUDA kernels need sm_80 or newer (mma.sync bf16, cp.async, ldmatrix)"
fi
if [[ -n "${CUDA_ARCH:-}" && "$CUDA_ARCH" != "$detected_arch" ]]; then
  say "gpu-check: note: CUDA_ARCH=$CUDA_ARCH while the first GPU is sm_$detected_arch"
fi
driver_cuda="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n1)"
toolkit_cuda="$("$nvcc_bin" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n1)"
if [[ -z "$toolkit_cuda" ]]; then
  fail_early "$kExitPrereq" "$nvcc_bin --version does not give a CUDA release"
fi
if [[ -z "$driver_cuda" ]]; then
  fail_early "$kExitDevice" "nvidia-smi does not say which CUDA version its driver ($driver_version) runs"
fi
if [[ "${driver_cuda%%.*}" -lt "${toolkit_cuda%%.*}" ]]; then
  fail_early "$kExitDevice" "the driver ($driver_version) runs CUDA up to $driver_cuda; this toolkit ($nvcc_bin) is CUDA $toolkit_cuda: nothing it builds can run. Update the driver, or use a CUDA ${driver_cuda%%.*} toolkit (CUDA_HOME)."
fi
say "gpu-check: $gpu_name, sm_$detected_arch, driver $driver_version (CUDA $driver_cuda);" \
  "nvcc $toolkit_cuda; building for sm_$arch"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "gpu: $smi_out"
  echo "driver CUDA: $driver_cuda; nvcc: $nvcc_bin ($toolkit_cuda)"
  echo "cmake: $("$cmake_bin" --version | head -n1)"
  echo "host compiler: $(${CXX:-c++} --version 2>/dev/null | head -n1)"
  echo "python3: $(python3 --version 2>&1)"
  [[ $torch -eq 1 ]] && echo "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>&1)"
} >"$out/environment.txt"
nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1

# ---- steps ----
declare -a names=() results=()
failed=0
record() {  # record NAME VERDICT DETAIL
  names+=("$1")
  results+=("$2${3:+  $3}")
  [[ "$2" == PASS* || "$2" == INFO* ]] || failed=1
}
# run_step NAME FILE COMMAND...: output to the terminal and OUT/FILE; PASS on exit 0, SKIP on 77
# (counted as a failure: here every check must run), FAIL otherwise.
run_step() {
  local name="$1" file="$2"; shift 2
  echo "== $name: $*"
  local start=$SECONDS
  "$@" 2>&1 | tee "$out/$file"
  local rc=${PIPESTATUS[0]}
  local verdict="PASS"
  if [[ $rc -eq 77 ]]; then
    verdict="SKIP"
  elif [[ $rc -ne 0 ]]; then
    verdict="FAIL(rc=$rc)"
  fi
  record "$name" "$verdict" "($((SECONDS - start)) s, $file)"
  return "$rc"
}
finish() {
  {
    echo
    echo "== summary (every file named here is in $out)"
    printf '%-26s %s\n' "step" "result"
    for i in "${!names[@]}"; do printf '%-26s %s\n' "${names[$i]}" "${results[$i]}"; done
  } | tee -a "$summary"
  if [[ $failed -ne 0 ]]; then
    say "gpu-check: FAILED (a step failed, or was skipped: a skipped check is a failure here)"
    exit "$kExitFailed"
  fi
  say "gpu-check: all steps passed"
  exit 0
}

# ---- 1. configure + build ----
if [[ $reuse -eq 0 ]]; then
  deps=()
  if [[ -d gpu-bundle/cmake ]]; then
    deps=(-DATTNDEV_BUNDLED_DEPS=ON "-DATTNDEV_BUNDLE_DIR=$PWD/gpu-bundle")
  else
    say "gpu-check: no gpu-bundle/ (scripts/gpu-bundle.sh): dependencies must come from the system"
  fi
  if ! run_step "configure" configure.log "$cmake_bin" -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_COMPILER=$nvcc_bin" "-DCMAKE_CUDA_ARCHITECTURES=$arch" \
    -DATTNDEV_CUDA=ON -DBUILD_TESTING=ON "${deps[@]}"; then
    finish
  fi
  if ! grep -q "attndev: CUDA backend ON" "$out/configure.log"; then
    record "CUDA backend" "FAIL" "configure did not enable it (see configure.log)"
    finish
  fi
  run_step "build" build.log "$cmake_bin" --build "$build" -j "$jobs" --target attndev_gpu_targets ||
    finish
fi
targets_file="$build/gpu-check-targets.txt"
if [[ ! -f "$targets_file" ]]; then
  record "targets" "FAIL" "$targets_file missing (is this a CUDA build?)"
  finish
fi
target_path() { awk -v n="$1" '$2 == n { print $3 }' "$targets_file"; }
check_tool="$(target_path attndev_cuda_check)"
attndev_bin="$(target_path attndev)"

# ---- 2. every CUDA test executable has ctest entries, and every entry passes ----
"$ctest_bin" --test-dir "$build" -N -L cuda --show-only=json-v1 >"$out/ctest-list.json" 2>&1
coverage="$(python3 - "$targets_file" "$out/ctest-list.json" <<'EOF'
import json, os, sys
targets = [l.split() for l in open(sys.argv[1]) if l.strip()]
listed = json.load(open(sys.argv[2])).get("tests", [])
commands = [os.path.realpath(t["command"][0]) for t in listed if t.get("command")]
for kind, name, path in targets:
    if kind == "test":
        n = sum(1 for c in commands if c == os.path.realpath(path))
        print(("ok" if n else "MISSING"), name, n)
EOF
)"
coverage_rc=$?
echo "$coverage" | tee "$out/ctest-coverage.txt"
if [[ $coverage_rc -ne 0 || -z "$coverage" ]]; then
  record "ctest coverage" "FAIL" "could not list the cuda tests (ctest-list.json)"
elif grep -q '^MISSING' <<<"$coverage"; then
  record "ctest coverage" "FAIL" "no ctest entry: $(grep '^MISSING' <<<"$coverage" | cut -d' ' -f2 | tr '\n' ' ')"
else
  record "ctest coverage" "PASS" "$(wc -l <<<"$coverage") executables, $(awk '{s += $3} END {print s}' <<<"$coverage") entries"
fi
run_step "ctest -L cuda" ctest.log "$ctest_bin" --test-dir "$build" -L cuda --no-tests=error \
  --output-on-failure --timeout 300 -j "$jobs"
# ctest exits 0 when a test returned its SKIP_RETURN_CODE: look for skipped entries by name.
skipped="$(grep -E '\*\*\*(Skipped|Not Run)|\((Skipped|Not Run|Disabled)\)' "$out/ctest.log" |
  sed -E 's/.*(Test +#[0-9]+: |[0-9]+ - )([^ ]+).*/\2/' | sort -u | tr '\n' ' ')"
if [[ -n "$skipped" ]]; then
  record "ctest skipped entries" "FAIL" "skipped: $skipped(a skipped GPU test compared nothing)"
fi

# ---- 3. sweep: the tool's exit status, and its rows, read by column ----
run_step "sweep cpu vs cuda" sweep.txt "$check_tool" sweep --points 24 --seed 1
# Rows: "INDEX RESULT ..." (faithful) and "RESULT ..." (flash2-tc); any DIFF/FAIL is a failure,
# whatever the exit status said.
bad_rows="$(awk '$1 == "DIFF" || $1 == "FAIL" || $2 == "DIFF" || $2 == "FAIL"' "$out/sweep.txt")"
if [[ -n "$bad_rows" ]]; then
  record "sweep rows" "FAIL" "$(wc -l <<<"$bad_rows") DIFF/FAIL rows in sweep.txt"
fi
if ! grep -qE '^[0-9]+ checks compared, 0 failed' "$out/sweep.txt"; then
  record "sweep count" "FAIL" "no '<n> checks compared, 0 failed' line in sweep.txt"
fi

# ---- 4. one point on both backends, and flash2-tc ----
for backend in cpu cuda; do
  run_step "point $backend" "point-$backend.txt" "$attndev_bin" point --backend "$backend" \
    --algo flash2 --policy kernel-bf16 --n 1000 --n-kv 1000 --d 64 --heads 2 --causal --seed 3
done
run_step "point cuda flash2-tc" point-flash2-tc.txt "$attndev_bin" point --backend cuda \
  --algo flash2-tc --policy kernel-bf16 --n 4096 --d 128 --heads 4 --br 128 --bc 64 --seed 3

# ---- 5. throughput ----
if run_step "throughput" throughput.txt "$check_tool" throughput --batch 4 --heads 16 --n 8192 \
  --d 128 --repeats 10; then
  ratio="$(sed -n 's/.*dense GEMM rate: \([0-9.]*\) (non-causal).*/\1/p' "$out/throughput.txt")"
  if [[ -z "$ratio" ]]; then
    record "throughput ratio" "FAIL" "no ratio line in throughput.txt"
  elif awk -v r="$ratio" 'BEGIN { exit !(r >= 0.5) }'; then
    record "throughput goal" "INFO" "flash2-tc / cuBLAS = $ratio: goal >= 0.5 met"
  else
    record "throughput goal" "INFO" "flash2-tc / cuBLAS = $ratio: goal >= 0.5 NOT met"
  fi
fi

# ---- 6. PyTorch's CUDA backends as external variants ----
if [[ $torch -eq 1 ]]; then
  rm -rf "$out/torch-cuda"
  run_step "torch cuda backends" torch-cuda.log "$attndev_bin" run \
    configs/validation/torch-cuda.json -o "$out/torch-cuda"
  [[ -f "$out/torch-cuda/summary.md" ]] && cp "$out/torch-cuda/summary.md" "$out/torch-cuda.md"
else
  record "torch cuda backends" "INFO" "left out (--no-torch)"
fi

# ---- 7. registers and spills per kernel, as built ----
cuobjdump_bin="$(dirname "$nvcc_bin")/cuobjdump"
cuda_lib="$(target_path attndev_cuda)"
if [[ -x "$cuobjdump_bin" && -f "$cuda_lib" ]]; then
  "$cuobjdump_bin" --dump-resource-usage "$cuda_lib" >"$out/resource-usage.txt" 2>&1 &&
    record "resource usage" "INFO" "resource-usage.txt" ||
    record "resource usage" "INFO" "cuobjdump failed (resource-usage.txt)"
fi

finish
