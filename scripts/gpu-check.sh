#!/usr/bin/env bash
# GPU acceptance, as groups of checks selectable by name, for a machine with an NVIDIA GPU (sm_80
# or newer). One device call runs one group (each sized for at most 5 minutes on one H100/H200,
# build included); without --group every group runs, one after the other.
#   0. prerequisites (all checked first, every missing one named; python3 with CUDA PyTorch only
#      when a selected group says "# needs: torch") and the device: nvidia-smi must answer, its
#      compute capability must be one (it becomes CMAKE_CUDA_ARCHITECTURES), the driver must run
#      this toolkit's CUDA major version;
#   1. configure + build the target `attndev_gpu_targets` once (test/cuda/extra.cmake: every CUDA
#      test executable, the check tool, attndev) for this GPU's architecture only, with the
#      dependency bundle of scripts/gpu-bundle.sh when it is present (the configuration CI builds);
#   2. each selected group: scripts/gpu-check/<group>.sh BUILD_DIR OUT_DIR/<group>, its summary
#      lines ("PASS|FAIL|INFO <check>: <detail>") on the terminal and in summary.txt, its logs in
#      OUT_DIR/<group>/, all of it tarred into OUT_DIR/<group>.tar.gz.
# Groups (scripts/gpu-check/*.sh; --list prints them): cuda-tests, kernels, throughput,
# torch-cuda, golden-inputs, device-twins, bench-point, long-context, cpu-paths, and every other
# script there (the twin groups tc-mma, exp2-table, fixtures, twins; a group's interface is
# written at the top of scripts/gpu-check/_common.bash).
# Exit status 0 only when every selected group passed; otherwise non-zero, and the summary names
# the failed checks.
#
# Usage: scripts/gpu-check.sh [options] OUT_DIR
#   --group NAME     run this group (repeatable; default: every group)
#   --list           print the groups and exit
#   --build-dir DIR  build folder (default build/gpu-check)
#   --reuse-build    neither configure nor build: use --build-dir as it is
#   --no-torch       leave out the groups that need PyTorch (default run only)
#   --group-timeout S  stop a group after S seconds (default 290; its files still come back)
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

groups_dir=scripts/gpu-check
# Every group, in the order a full run takes them: this list first, then any other script.
known_order=(cuda-tests kernels throughput torch-cuda golden-inputs device-twins bench-point
  long-context cpu-paths)
all_groups() {
  local g seen=" "
  for g in "${known_order[@]}"; do
    [[ -f "$groups_dir/$g.sh" ]] && { echo "$g"; seen+="$g "; }
  done
  for f in "$groups_dir"/*.sh; do
    g="$(basename "$f" .sh)"
    [[ "$g" == _* || "$seen" == *" $g "* ]] || echo "$g"
  done
}
group_summary() {  # the first comment line after the shebang: what the group checks
  sed -n '2{s/^# *//;p;q}' "$groups_dir/$1.sh"
}

build=build/gpu-check
reuse=0
torch=1
jobs="$(nproc 2>/dev/null || echo 4)"
group_timeout=290
out=""
selected=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --group) [[ $# -ge 2 ]] || usage; selected+=("$2"); shift 2 ;;
    --list)
      for g in $(all_groups); do printf '%-16s %s\n' "$g" "$(group_summary "$g")"; done
      exit 0 ;;
    --build-dir) [[ $# -ge 2 ]] || usage; build="$2"; shift 2 ;;
    --reuse-build) reuse=1; shift ;;
    --no-torch) torch=0; shift ;;
    --group-timeout) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; group_timeout="$2"; shift 2 ;;
    -j) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; jobs="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu-check.sh: unknown option $1" >&2; usage ;;
    *) [[ -z "$out" ]] || { echo "gpu-check.sh: one OUT_DIR only" >&2; usage; }; out="$1"; shift ;;
  esac
done
# Unknown groups are refused with the list, before anything else.
known="$(all_groups | tr '\n' ' ')"
for g in "${selected[@]}"; do
  if [[ " $known" != *" $g "* ]]; then
    echo "gpu-check.sh: unknown group \"$g\"; the groups are: $known" >&2
    exit "$kExitUsage"
  fi
done
needs_torch() { grep -q '^# needs:.*\btorch\b' "$groups_dir/$1.sh"; }
if [[ ${#selected[@]} -eq 0 ]]; then
  for g in $(all_groups); do
    if [[ $torch -eq 0 ]] && needs_torch "$g"; then continue; fi
    selected+=("$g")
  done
fi
torch=0
for g in "${selected[@]}"; do needs_torch "$g" && torch=1; done
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
    missing+=("python3 with CUDA PyTorch, for the groups that need it ($(echo "$torch_why" | tail -n1); or leave them out: --no-torch, or --group)")
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
    say "gpu-check: FAILED (a check failed, or was skipped: a skipped check is a failure here)"
    exit "$kExitFailed"
  fi
  say "gpu-check: all selected groups passed (${selected[*]})"
  exit 0
}

# ---- 1. configure + build, once for every group ----
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
if [[ ! -f "$build/gpu-check-targets.txt" ]]; then
  record "targets" "FAIL" "$build/gpu-check-targets.txt missing (is this a CUDA build?)"
  finish
fi

# ---- 2. the groups ----
for g in "${selected[@]}"; do
  gout="$out/$g"
  rm -rf "$gout" "$out/$g.tar.gz"
  mkdir -p "$gout"
  echo "== group $g: $(group_summary "$g")"
  start=$SECONDS
  # Summary lines on stdout (and checks.txt); the group's logs on stderr go to group.log.
  CTEST="$ctest_bin" NVCC="$nvcc_bin" JOBS="$jobs" timeout --kill-after=10 "$group_timeout" \
    bash "$groups_dir/$g.sh" "$build" "$gout" 2>"$gout/group.log" | tee "$gout/checks.txt"
  rc=${PIPESTATUS[0]}
  # Summary lines: "PASS|FAIL|INFO|SKIP <check>: ..." (_common.bash), or "<group>: PASS|FAIL ..."
  # (the twin groups' form).
  grep -E '^(PASS|FAIL|INFO|SKIP)\b|^[A-Za-z0-9_-]+: .*\b(PASS|FAIL)\b' "$gout/checks.txt" |
    sed "s/^/  [$g] /" >>"$summary"
  case "$rc" in
    0) verdict=PASS ;;
    77) verdict=SKIP ;;
    124|137) verdict="FAIL(timed out after $group_timeout s)" ;;
    *) verdict="FAIL(rc=$rc)" ;;
  esac
  if [[ $rc -eq 0 ]] && grep -qE '^(FAIL|SKIP)\b|^[A-Za-z0-9_-]+: FAIL\b' "$gout/checks.txt"; then
    verdict="FAIL(a FAIL line with exit status 0)"  # the lines are read, whatever the status said
  fi
  record "group $g" "$verdict" "($((SECONDS - start)) s, $g.tar.gz)"
  tar -czf "$out/$g.tar.gz" -C "$out" "$g" || record "tar $g" "FAIL" "could not write $g.tar.gz"
done

finish
