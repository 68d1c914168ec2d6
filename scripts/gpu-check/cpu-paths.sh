#!/usr/bin/env bash
# Group cpu-paths: the CPU emulator's standard set (`attndev bench --all`) on this node, each
# configuration checked before it is timed; its figures are reported for comparison with an
# earlier run on the same node (CPU_PATHS_REFERENCE=bench.json of that run: a configuration more
# than 10% slower is reported as such; speed is never a pass/fail criterion).
source "$(dirname "$0")/_common.bash"
run_to bench-all.json "$attndev_bin" bench --all --n "${CPU_BENCH_N:-2048}" --d 128 --repeats 3 --json
rc=$?
check "$(verdict_of "$rc")" "bench --all" "bench-all.json"
if [[ $rc -eq 0 ]]; then
  python3 - "$out/bench-all.json" "${CPU_PATHS_REFERENCE:-}" <<'PY' || check FAIL "bench --all json" "unreadable"
import json, sys
now = {r["label"]: r for r in json.load(open(sys.argv[1]))["results"]}
ref = {}
if len(sys.argv) > 2 and sys.argv[2]:
    ref = {r["label"]: r for r in json.load(open(sys.argv[2]))["results"]}
for label, r in now.items():
    line = "INFO cpu %s: %s" % (label, "%.4f s" % r["median_s"] if "median_s" in r else r["check"])
    if label in ref and "median_s" in ref[label] and "median_s" in r:
        ratio = r["median_s"] / ref[label]["median_s"]
        line += " (%.2fx the reference%s)" % (ratio, ", SLOWER" if ratio > 1.1 else "")
    print(line)
PY
fi
finish_group
