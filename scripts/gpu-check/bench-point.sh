#!/usr/bin/env bash
# Group bench-point: `attndev bench --backend cuda` at one point, N = 65536, d = 128, B = H = 1:
# one line per part (inputs, golden, the flash2 and baseline twins, flash2-tc, the cuBLAS
# baseline), each checked on a small problem before it is timed. The target (the whole point in
# at most 5 s on one H100/H200) is reported, not a pass/fail criterion.
source "$(dirname "$0")/_common.bash"
n="${BENCH_N:-65536}"
run_to bench.txt "$attndev_bin" bench --backend cuda --n "$n" --d 128 --policy kernel-bf16 \
  --repeats 1
rc=$?
check "$(verdict_of "$rc")" "bench --backend cuda N=$n" "bench.txt"
run_to bench.json "$attndev_bin" bench --backend cuda --n "$n" --d 128 --policy kernel-bf16 \
  --repeats 1 --json
if [[ $rc -eq 0 ]]; then
  python3 - "$out/bench.json" <<'PY' || check FAIL "bench json" "bench.json unreadable"
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["parts"]:
    t = "%.3f s" % p["median_s"] if "median_s" in p else "-"
    print("INFO part %s: %s (%s)" % (p["part"], t, p["check"]))
total = doc["total_s"]
print("INFO point total: %.3f s (target <= 5 s: %s)" % (total, "met" if total <= 5 else "NOT met"))
PY
fi
finish_group
