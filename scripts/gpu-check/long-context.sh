#!/usr/bin/env bash
# Group long-context: configs/examples/long-context.json on the device (flash2 and baseline twins,
# flash2-tc and the cuBLAS baseline, bf16 and fp16, N = 1024 ... 131072, d = 128): attndev plan's
# device memory first, then the run. The target (the whole config in at most 3 minutes on one
# H100/H200) is reported, not a pass/fail criterion; LONG_CONTEXT_AXIS (e.g. seq_len=[1024,2048])
# narrows it.
source "$(dirname "$0")/_common.bash"
config=configs/examples/long-context.json
overrides=()
[[ -n "${LONG_CONTEXT_AXIS:-}" ]] && overrides=(-a "$LONG_CONTEXT_AXIS")
run_to plan.txt "$attndev_bin" plan "$config" "${overrides[@]}" --no-estimate
rc=$?
check "$(verdict_of "$rc")" "plan (device memory)" "$(grep -m1 '^device memory' "$out/plan.txt")"
rm -rf "$out/long-context"
start=$SECONDS
run_to run.log "$attndev_bin" run "$config" "${overrides[@]}" -o "$out/long-context" --backend cuda
rc=$?
seconds=$((SECONDS - start))
check "$(verdict_of "$rc")" "run long-context" "run.log"
check INFO "long-context time" "$seconds s (target <= 180 s: $([[ $seconds -le 180 ]] && echo met || echo NOT met))"
[[ -f "$out/long-context/summary.md" ]] && cp "$out/long-context/summary.md" "$out/summary.md"
finish_group
