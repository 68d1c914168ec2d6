#!/usr/bin/env bash
# scripts/gpu-check.sh's failure paths, without a GPU: fake nvidia-smi and nvcc on PATH, and fake
# build trees (a CTestTestfile.cmake and shell scripts standing in for the test executables and
# tools) for the steps after the build. Each case checks the exit status and the reason printed.
# Usage: gpu_check_test.sh SCRIPT (the gpu-check.sh to test)
set -uo pipefail
script="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
cases=0

# ---- fakes ----
mkdir -p "$work/bin"
cat >"$work/bin/nvidia-smi" <<'SMI'
#!/bin/sh
if [ "$FAKE_SMI" = nodriver ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
  exit 9
fi
case "$1" in
  --query-gpu=*)
    case "$FAKE_SMI" in
      badfield) echo 'Field "compute_cap" is not a valid field to query.' ;;
      na) echo "NVIDIA H200, [N/A], 580.65.06" ;;
      oldcap) echo "Tesla T4, 7.5, 580.65.06" ;;
      *) echo "NVIDIA H200, 9.0, 580.65.06" ;;
    esac ;;
  -q) echo "fake nvidia-smi -q" ;;
  *) v=13.0; [ "$FAKE_SMI" = olddriver ] && v=12.4
     echo "| NVIDIA-SMI 580.65.06    Driver Version: 580.65.06    CUDA Version: $v |" ;;
esac
exit 0
SMI
cat >"$work/bin/nvcc" <<'NVCC'
#!/bin/sh
echo "nvcc: NVIDIA (R) Cuda compiler driver"
echo "Cuda compilation tools, release 13.0, V13.0.88"
NVCC
chmod +x "$work/bin/nvidia-smi" "$work/bin/nvcc"

# A fake CUDA build: what --reuse-build reads (gpu-check-targets.txt, ctest entries, tools). The
# tools answer every subcommand the groups call, passing unless a FAKE_* variable says otherwise.
make_build() {  # make_build DIR [--without-cuda-tests-entry]
  local b="$1"
  mkdir -p "$b"
  printf '#!/bin/sh\nexit "${FAKE_GPU_RC:-0}"\n' >"$b/gpu_kernels"
  printf '#!/bin/sh\nexit 0\n' >"$b/cuda_tests"
  cat >"$b/check" <<'CHECK'
#!/bin/sh
[ -n "${FAKE_TOOL_RC:-}" ] && { echo "SKIPPED: no device" >&2; exit "$FAKE_TOOL_RC"; }
[ -n "${FAKE_SLEEP:-}" ] && sleep "$FAKE_SLEEP"
case "$1" in
  sweep)
    echo "#    result elements case"
    echo "0    equal  100      flash2 kernel-bf16"
    if [ "${FAKE_SWEEP:-}" = diff ]; then echo "1    DIFF   100      flash1 fp32  [3 mismatches]"; fi
    echo "result tc_err"
    echo "pass   1e-3 2e-3 1e-4 flash2-tc"
    echo
    echo "3 checks compared, 0 failed" ;;
  device)
    echo "PASS $3 case one: 100 elements identical"
    if [ "${FAKE_DEVICE:-}" = fail ]; then
      echo "FAIL $3 case two: 2 of 100 elements differ"
      echo; echo "2 checks compared, 1 failed"
    else
      echo; echo "1 checks compared, 0 failed"
    fi ;;
  *) echo "flash2-tc / dense GEMM rate: 0.42 (non-causal), 0.30 (causal); goal >= 0.5" ;;
esac
exit 0
CHECK
  cat >"$b/attndev" <<'APP'
#!/bin/sh
case "$1" in
  bench)
    case " $* " in
      *" --all "*) echo '{"results": [{"label": "flash2 kernel-bf16", "median_s": 0.5, "check": "ok"}]}' ;;
      *" --json "*) echo '{"parts": [{"part": "inputs", "median_s": 0.1, "check": "ok: 10 elements identical"}], "total_s": 0.1}' ;;
      *) echo "part   median s   check" ;;
    esac ;;
  plan) echo "device memory: 3 GiB at point 7 (golden: 2 GiB)" ;;
  run)
    while [ $# -gt 0 ]; do [ "$1" = -o ] && { mkdir -p "$2"; echo "# summary" >"$2/summary.md"; }; shift; done ;;
  *) echo "point table" ;;
esac
exit 0
APP
  chmod +x "$b"/*
  {
    echo "lib attndev_cuda $b/libattndev_cuda.a"
    echo "tool attndev_cuda_check $b/check"
    echo "app attndev $b/attndev"
    echo "test cuda_gpu_kernels $b/gpu_kernels"
    echo "test cuda_tests $b/cuda_tests"
  } >"$b/gpu-check-targets.txt"
  {
    echo "add_test(cuda_gpu_kernels \"$b/gpu_kernels\")"
    echo "set_tests_properties(cuda_gpu_kernels PROPERTIES LABELS \"gpu;cuda\" SKIP_RETURN_CODE 77)"
    if [[ "${2:-}" != --without-cuda-tests-entry ]]; then
      echo "add_test(cuda_tests \"$b/cuda_tests\")"
      echo "set_tests_properties(cuda_tests PROPERTIES LABELS \"cuda\")"
    fi
  } >"$b/CTestTestfile.cmake"
}
make_build "$work/build-ok"
make_build "$work/build-no-entry" --without-cuda-tests-entry

# run_case NAME WANT_RC [env VAR=VALUE ...] -- ARGS... ; then each `want`/`absent` checks output.
out_text=""
run_case() {
  local name="$1" want_rc="$2"; shift 2
  local envs=()
  while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  cases=$((cases + 1))
  current="$name"
  out_text="$(env "${envs[@]}" bash "$script" "$@" 2>&1)"
  local rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL [$name]: exit $rc, expected $want_rc; output:"
    echo "$out_text" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}
want() {  # want PATTERN: the last case's output matches (grep -E)
  if ! grep -qE -- "$1" <<<"$out_text"; then
    echo "FAIL [$current]: output lacks /$1/; output:"
    echo "$out_text" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}
absent_path() {  # absent_path PATH: nothing was built
  if [[ -e "$1" ]]; then
    echo "FAIL [$current]: $1 exists (a build was attempted)"
    failures=$((failures + 1))
  fi
}

fake_path="$work/bin:$PATH"
# The fakes must win over whatever the environment points at.
dev=(PATH="$fake_path" CUDA_HOME= CUDA_ARCH=)
common=("${dev[@]}" FAKE_SMI=ok)

# 1. usage
run_case "no OUT_DIR" 2 "${common[@]}" -- --no-torch
want "missing OUT_DIR"

# 2. prerequisites: a PATH with the shell's basic tools only; every missing tool named at once
mkdir -p "$work/basic"
for tool in bash sh env sed grep awk head tail cut tr sort wc mkdir cat tee date dirname basename \
  nproc rm git; do
  p="$(command -v "$tool")" && ln -sf "$p" "$work/basic/$tool"
done
run_case "missing prerequisites" 3 PATH="$work/basic" CUDA_HOME="$work/no-cuda" CUDA_ARCH= CXX= -- \
  "$work/out-prereq"
want "missing prerequisites"
want "cmake and ctest"
want "ninja"
want "nvcc"
want "nvidia-smi"
want "python3"
want "C\+\+20 host compiler"
grep -q "missing prerequisites" "$work/out-prereq/summary.txt" 2>/dev/null ||
  { echo "FAIL [$current]: summary.txt lacks the reason"; failures=$((failures + 1)); }
run_case "python3 without CUDA torch, torch-cuda selected" 3 "${common[@]}" PYTHONPATH="$work/no-torch" -- \
  --build-dir "$work/b-torch" "$work/out-torch"
want "python3 with CUDA PyTorch"
absent_path "$work/b-torch"

# 3. the device: nvidia-smi errors never become an architecture; nothing is configured
run_case "no driver" 4 "${dev[@]}" FAKE_SMI=nodriver -- --no-torch --build-dir "$work/b1" "$work/o1"
want "nvidia-smi failed \(exit 9\)"
want "couldn't communicate with the NVIDIA driver"
absent_path "$work/b1"
run_case "invalid query field" 4 "${dev[@]}" FAKE_SMI=badfield -- --no-torch --build-dir "$work/b2" "$work/o2"
want "no compute capability"
want "not a valid field"
absent_path "$work/b2"
run_case "compute_cap [N/A]" 4 "${dev[@]}" FAKE_SMI=na -- --no-torch --build-dir "$work/b3" "$work/o3"
want "no compute capability"
absent_path "$work/b3"
run_case "sm_75" 4 "${dev[@]}" FAKE_SMI=oldcap -- --no-torch --build-dir "$work/b4" "$work/o4"
want "sm_75 .*need sm_80 or newer"
absent_path "$work/b4"
run_case "CUDA_ARCH not a number" 4 "${common[@]}" "CUDA_ARCH=90;80" -- --no-torch --build-dir "$work/b5" "$work/o5"
want "CUDA_ARCH='90;80' is not one architecture number"
absent_path "$work/b5"
run_case "driver older than the toolkit" 4 "${dev[@]}" FAKE_SMI=olddriver -- --no-torch --build-dir "$work/b6" "$work/o6"
want "runs CUDA up to 12.4; this toolkit .* is CUDA"
absent_path "$work/b6"

# 4. groups by name: the list, an unknown name, what each group leaves behind
groups_dir="$(dirname "$script")/gpu-check"
my_groups=(cuda-tests kernels throughput golden-inputs device-twins bench-point long-context cpu-paths)
run_case "--list" 0 "${common[@]}" -- --list
for g in "${my_groups[@]}" torch-cuda; do want "^$g "; done
run_case "an unknown group is refused with the list" 2 "${common[@]}" -- --group nope "$work/o-nope"
want 'unknown group "nope"; the groups are: .*golden-inputs'
absent_path "$work/o-nope"
# A group that needs no torch runs where python3 has none (only torch-cuda asks for it).
run_case "--group without torch needs no CUDA PyTorch" 0 "${common[@]}" PYTHONPATH="$work/no-torch" -- \
  --group kernels --reuse-build --build-dir "$work/build-ok" "$work/o-notorch"

# 5. after the build (--reuse-build over a fake build tree): every group alone, then all of them
for g in "${my_groups[@]}"; do
  run_case "group $g" 0 "${common[@]}" -- --group "$g" --reuse-build --build-dir "$work/build-ok" \
    "$work/o-$g"
  want "gpu-check: all selected groups passed \\($g\\)"
  want "group $g +PASS"
  [[ -s "$work/o-$g/$g.tar.gz" ]] || { echo "FAIL [$current]: $g.tar.gz not written"; failures=$((failures + 1)); }
  # The listing in full, then the search (grep -q closing the pipe early would fail the pipeline).
  listing="$(tar -tzf "$work/o-$g/$g.tar.gz")"
  grep -q "^$g/checks.txt" <<<"$listing" ||
    { echo "FAIL [$current]: $g.tar.gz lacks checks.txt"; failures=$((failures + 1)); }
  grep -qE "^  \[$g\] (PASS|INFO) " "$work/o-$g/summary.txt" ||
    { echo "FAIL [$current]: summary.txt has no summary line of $g"; failures=$((failures + 1)); }
  [[ -e "$groups_dir/$g.sh" && -x "$groups_dir/$g.sh" ]] ||
    { echo "FAIL [$current]: $g.sh is not an executable script"; failures=$((failures + 1)); }
done
for f in kernels/sweep.txt kernels/point-cpu.txt kernels/point-cuda.txt kernels/point-flash2-tc.txt \
  throughput/throughput.txt cuda-tests/ctest.log cuda-tests/ctest-coverage.txt \
  golden-inputs/inputs.txt golden-inputs/golden.txt device-twins/twins.txt bench-point/bench.json \
  long-context/plan.txt long-context/summary.md cpu-paths/bench-all.json; do
  [[ -s "$work/o-${f%%/*}/$f" ]] || { echo "FAIL: $f not written"; failures=$((failures + 1)); }
done
run_case "several groups in one call" 0 "${common[@]}" -- --group golden-inputs --group bench-point \
  --reuse-build --build-dir "$work/build-ok" "$work/o-two"
want "group golden-inputs +PASS"
want "group bench-point +PASS"
want "INFO point total: 0.100 s \\(target <= 5 s: met\\)"
# Without --group every group runs: these, and the twin groups of scripts/gpu-check/ (tc-mma and
# exp2-table fail on this fake build, which has none of their probes); --no-torch leaves out the
# groups that say "# needs: torch".
run_case "every group, --no-torch" 1 "${common[@]}" -- --no-torch --reuse-build \
  --build-dir "$work/build-ok" "$work/o7"
for g in "${my_groups[@]}"; do want "group $g +PASS"; done
want "throughput goal: flash2-tc / cuBLAS = 0.42: goal >= 0.5 NOT met"
for g in $(bash "$script" --list | awk '{print $1}'); do
  if grep -q '^# needs:.*torch' "$groups_dir/$g.sh"; then
    if grep -q "group $g " <<<"$out_text"; then
      echo "FAIL [$current]: $g needs torch and ran under --no-torch"; failures=$((failures + 1))
    fi
  else
    want "group $g "
  fi
done
for f in summary.txt environment.txt nvidia-smi.txt; do
  [[ -s "$work/o7/$f" ]] || { echo "FAIL [$current]: $f not written"; failures=$((failures + 1)); }
done

# 6. failures inside groups
run_case "a skipped GPU test is a failure" 1 "${common[@]}" FAKE_GPU_RC=77 -- --group cuda-tests \
  --reuse-build --build-dir "$work/build-ok" "$work/o8"
want "FAIL ctest skipped entries: skipped: cuda_gpu_kernels"
want "gpu-check: FAILED"
run_case "a failing GPU test" 1 "${common[@]}" FAKE_GPU_RC=1 -- --group cuda-tests --reuse-build \
  --build-dir "$work/build-ok" "$work/o9"
want "FAIL\\(rc=[0-9]+\\) ctest -L cuda"
run_case "a DIFF row with exit status 0" 1 "${common[@]}" FAKE_SWEEP=diff -- --group kernels \
  --reuse-build --build-dir "$work/build-ok" "$work/o10"
want "FAIL sweep rows: 1 DIFF/FAIL rows"
run_case "the tools skip (no device)" 1 "${common[@]}" FAKE_TOOL_RC=77 -- --group kernels \
  --group throughput --reuse-build --build-dir "$work/build-ok" "$work/o11"
want "SKIP sweep cpu vs cuda"
want "SKIP throughput"
want "group kernels +SKIP"
run_case "a CUDA test executable without ctest entries" 1 "${common[@]}" -- --group cuda-tests \
  --reuse-build --build-dir "$work/build-no-entry" "$work/o12"
want "FAIL ctest coverage: no ctest entry: cuda_tests"
run_case "a device check that failed, with exit status 0" 1 "${common[@]}" FAKE_DEVICE=fail -- \
  --group golden-inputs --reuse-build --build-dir "$work/build-ok" "$work/o13"
want "FAIL inputs case two"
want "FAIL device inputs count"
want "group golden-inputs +FAIL"
run_case "a group past its time limit" 1 "${common[@]}" FAKE_SLEEP=5 -- --group throughput \
  --group-timeout 1 --reuse-build --build-dir "$work/build-ok" "$work/o14"
want "group throughput +FAIL\\(timed out after 1 s\\)"
[[ -s "$work/o14/throughput.tar.gz" ]] ||
  { echo "FAIL [$current]: a timed-out group's files were not tarred"; failures=$((failures + 1)); }

echo "gpu_check_test: $cases cases, $failures failed checks"
[[ $failures -eq 0 ]]
