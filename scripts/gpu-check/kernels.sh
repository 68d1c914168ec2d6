#!/usr/bin/env bash
# Group kernels: the CUDA kernels against the emulator (faithful flash1/flash2 bit for bit on 24
# random points, flash2-tc within lib/measure's baseline rule at bf16 and fp16), attndev point on
# both backends and flash2-tc at N=4096, and the registers and spills of every kernel as built.
source "$(dirname "$0")/_common.bash"

run_to sweep.txt "$check_tool" sweep --points 24 --seed 1
rc=$?
check "$(verdict_of "$rc")" "sweep cpu vs cuda" "sweep.txt"
# Rows: "INDEX RESULT ..." (faithful) and "RESULT ..." (flash2-tc); any DIFF/FAIL is a failure,
# whatever the exit status said.
bad_rows="$(awk '$1 == "DIFF" || $1 == "FAIL" || $2 == "DIFF" || $2 == "FAIL"' "$out/sweep.txt")"
if [[ -n "$bad_rows" ]]; then
  check FAIL "sweep rows" "$(wc -l <<<"$bad_rows") DIFF/FAIL rows in sweep.txt"
fi
if ! grep -qE '^[0-9]+ checks compared, 0 failed' "$out/sweep.txt"; then
  check FAIL "sweep count" "no '<n> checks compared, 0 failed' line in sweep.txt"
fi

for backend in cpu cuda; do
  run_to "point-$backend.txt" "$attndev_bin" point --backend "$backend" --algo flash2 \
    --policy kernel-bf16 --n 1000 --n-kv 1000 --d 64 --heads 2 --causal --seed 3
  rc=$?
  check "$(verdict_of "$rc")" "point $backend" "point-$backend.txt"
done
run_to point-flash2-tc.txt "$attndev_bin" point --backend cuda --algo flash2-tc \
  --policy kernel-bf16 --n 4096 --d 128 --heads 4 --br 128 --bc 64 --seed 3
rc=$?
check "$(verdict_of "$rc")" "point cuda flash2-tc" "point-flash2-tc.txt"

cuobjdump_bin="$(dirname "$(command -v "${NVCC:-nvcc}" 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/cuobjdump"
cuda_lib="$(target_path attndev_cuda)"
if [[ -x "$cuobjdump_bin" && -f "$cuda_lib" ]]; then
  if "$cuobjdump_bin" --dump-resource-usage "$cuda_lib" >"$out/resource-usage.txt" 2>&1; then
    check INFO "resource usage" "resource-usage.txt"
  else
    check INFO "resource usage" "cuobjdump failed (resource-usage.txt)"
  fi
fi
finish_group
