#!/usr/bin/env bash
# GPU acceptance in one go (sized for about 5 minutes on one H100/H200):
#   1. configure + build the CUDA backend, its tests, the check tool and attndev (this GPU's arch
#      only, to keep nvcc's time down);
#   2. ctest: the dispatch unit test and the GPU tests (label gpu);
#   3. sweep: faithful flash1/flash2 vs the CPU emulator bit for bit on 24 random points, and
#      flash2-tc vs the golden (2x baseline + floor) at bf16 and fp16;
#   4. attndev point with --backend cpu and --backend cuda on the same point;
#   5. throughput: flash2-tc bf16 at B=4 H=16 N=8192 d=128 vs cuBLAS's dense bf16 GEMM rate.
# Prints a short summary table; exits non-zero when any step failed.
# Environment: ATTNDEV_JOBS (build parallelism), CUDA_ARCH (e.g. 90; default: detected).
set -uo pipefail
cd "$(dirname "$0")/.."
build=build/gpu-check
jobs="${ATTNDEV_JOBS:-$(nproc)}"
log_dir="$build/gpu-check-logs"
mkdir -p "$log_dir"

arch="${CUDA_ARCH:-}"
if [[ -z "$arch" ]] && command -v nvidia-smi >/dev/null; then
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
fi
arch="${arch:-80;90}"

declare -a names results
step() {  # step NAME COMMAND...: runs, logs, records PASS/FAIL/SKIP (exit 77)
  local name="$1"; shift
  local log="$log_dir/${name// /_}.log"
  echo "== $name: $*"
  local start=$SECONDS
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local verdict=PASS
  [[ $rc -eq 77 ]] && verdict=SKIP
  [[ $rc -ne 0 && $rc -ne 77 ]] && verdict="FAIL(rc=$rc)"
  names+=("$name"); results+=("$verdict ($((SECONDS - start)) s)")
  return $rc
}

step "configure" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DATTNDEV_CUDA=ON || exit 1
if ! grep -q "ATTNDEV_HAVE_CUDA:INTERNAL=ON\|attndev: CUDA backend ON" "$log_dir/configure.log"; then
  echo "gpu-check: the CUDA backend was not enabled (is nvcc on PATH or in /usr/local/cuda?)"
  exit 1
fi
step "build" cmake --build "$build" -j "$jobs" --target attndev_cuda cuda_test_dispatch \
  cuda_gpu_kernels attndev_cuda_check attndev || exit 1

step "gpu tests" ctest --test-dir "$build" -L "gpu|cuda" --output-on-failure --timeout 300
step "sweep cpu vs cuda" "$build/lib/cuda/attndev_cuda_check" sweep --points 24 --seed 1
for backend in cpu cuda; do
  step "point $backend" "$build/apps/attndev/attndev" point --backend "$backend" --algo flash2 \
    --policy kernel-bf16 --n 1000 --n-kv 1000 --d 64 --heads 2 --causal --seed 3
done
step "point cuda flash2-tc" "$build/apps/attndev/attndev" point --backend cuda --algo flash2-tc \
  --policy kernel-bf16 --n 4096 --d 128 --heads 4 --br 128 --bc 64 --seed 3
step "throughput" "$build/lib/cuda/attndev_cuda_check" throughput --batch 4 --heads 16 --n 8192 \
  --d 128 --repeats 10

echo
echo "== summary (logs in $log_dir)"
printf '%-24s %s\n' "step" "result"
failed=0
for i in "${!names[@]}"; do
  printf '%-24s %s\n' "${names[$i]}" "${results[$i]}"
  [[ "${results[$i]}" == FAIL* ]] && failed=1
done
echo
grep -h -E "^(DIFF|FAIL)|checks compared" "$log_dir/sweep_cpu_vs_cuda.log" 2>/dev/null
grep -h -E "flash2-tc|cuBLAS|rate" "$log_dir/throughput.log" 2>/dev/null
exit $failed
