#!/usr/bin/env bash
# The cost of a process per point, measured: one sweep of POINTS small points (trials of one
# shape, each its own input set) with one external variant, numpy_attention.py, run once as a
# per-point command and once as a worker (docs/configs.md#external-workers). Each run is timed whole
# with /usr/bin/time -v (the forms alternate ROUNDS times, so that a change in the machine's load
# hits both); the rows' runtime_ms (the external call alone, per point) are summarised too.
#
#   scripts/external/bench_worker.sh [POINTS=200] [ROUNDS=1] [PYTHON=/usr/bin/python3: Debian's, with numpy]
#
# ATTNDEV_BIN overrides the binary (default: the release build's). Prints one line per run and
# the ratio of the whole runs' wall times, and checks that both forms' rows have the same metrics;
# the folders are removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
points="${1:-200}"
rounds="${2:-1}"
python="${3:-/usr/bin/python3}"
bin="${ATTNDEV_BIN:-build/release/apps/attndev/attndev}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
script="$PWD/scripts/external/numpy_attention.py"
worker="$PWD/python/attndev/worker.py"

config() {  # NAME EXTERNAL_JSON
  cat > "$tmp/$1.json" <<EOF
{"name": "$1", "reference": "golden",
 "axes": {"seq_len": 64, "head_dim": 32, "block_r": 16, "block_c": 16},
 "trials": {"count": $points, "seed": 27},
 "variants": [{"name": "numpy", "format": "fp32", "external": $2}]}
EOF
}
config per-point "\"$python $script {inputs} {output}\""
config worker "{\"worker\": \"$python $worker $script:worker_point\"}"

run() {  # NAME ROUND
  local out="$tmp/out-$1-$2"
  /usr/bin/time -v "$bin" run "$tmp/$1.json" --out "$out" --threads 1 >/dev/null 2>"$tmp/time.txt"
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.txt")
  "$python" - "$out/results.jsonl" "$1" "$wall" "$rss" <<'EOF'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("record") == "row"]
ok = sum(r["status"] == "ok" for r in rows)
ms = [r["runtime_ms"] for r in rows]
m, s = sys.argv[3].split(":")[-2:]
print(f"{sys.argv[2]:>9}: {len(rows)} rows ({ok} ok), whole run {float(m) * 60 + float(s):.2f} s "
      f"(max RSS of attndev {int(sys.argv[4]) // 1024} MiB), per point: median "
      f"{statistics.median(ms):.2f} ms, mean {statistics.mean(ms):.2f} ms, first {ms[0]:.1f} ms")
EOF
  echo "$wall" >> "$tmp/wall-$1"
}

for round in $(seq "$rounds"); do
  run per-point "$round"
  run worker "$round"
done
"$python" - "$tmp/wall-per-point" "$tmp/wall-worker" "$tmp/out-per-point-1/results.jsonl" \
  "$tmp/out-worker-1/results.jsonl" <<'EOF'
import json, sys
rows = [{r["point_id"]: r for r in map(json.loads, open(f)) if r.get("record") == "row"}
        for f in sys.argv[3:5]]
metrics = ("max_abs", "mean_abs", "rmse", "rel_l2", "max_rel")
same = sum(all(rows[0][p].get(m) == w.get(m) for m in metrics) for p, w in rows[1].items())
print(f"rows with every metric identical in both forms: {same} of {len(rows[1])}")
def seconds(t):
    parts = [float(x) for x in t.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
walls = [[seconds(l) for l in open(f) if l.strip()] for f in sys.argv[1:3]]
print(f"whole runs, per-point / worker: {min(walls[0]):.2f} s / {min(walls[1]):.2f} s = "
      f"{min(walls[0]) / min(walls[1]):.1f}x (the best of each)")
EOF
