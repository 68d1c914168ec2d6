#!/usr/bin/env bash
# Group throughput: flash2-tc bf16 at B=4 H=16 N=8192 d=128 (checked first, never timed when it
# fails) against cuBLAS's dense bf16 GEMM rate measured in the same run; the ratio against the
# goal of 0.5 is reported, not a pass/fail criterion.
source "$(dirname "$0")/_common.bash"
run_to throughput.txt "$check_tool" throughput --batch 4 --heads 16 --n 8192 --d 128 --repeats 10
rc=$?
check "$(verdict_of "$rc")" "throughput" "throughput.txt"
if [[ $rc -eq 0 ]]; then
  ratio="$(sed -n 's/.*dense GEMM rate: \([0-9.]*\) (non-causal).*/\1/p' "$out/throughput.txt")"
  if [[ -z "$ratio" ]]; then
    check FAIL "throughput ratio" "no ratio line in throughput.txt"
  elif awk -v r="$ratio" 'BEGIN { exit !(r >= 0.5) }'; then
    check INFO "throughput goal" "flash2-tc / cuBLAS = $ratio: goal >= 0.5 met"
  else
    check INFO "throughput goal" "flash2-tc / cuBLAS = $ratio: goal >= 0.5 NOT met"
  fi
fi
finish_group
