#!/usr/bin/env bash
# gpu-check group exp2-table: measures the device's ex2.approx.ftz.f32 at every fp32 input a
# softmax can give it, fits and stores it (tools/tc_probe/exp2_probe.cu), and checks on the device
# that the stored form reproduces every measured value. The table is what the twins load
# (docs/numerics.md, "Twins of the CUDA kernels": $ATTNDEV_EXP2_TABLE, or
# data/exp2/ex2.approx.ftz.f32.table in the source tree). One line per hypothesis and per check.
#
# Usage: scripts/gpu-check/exp2-table.sh BUILD_DIR OUT_DIR
#   OUT_DIR  receives ex2.approx.ftz.f32.table (at most 16 MiB) and exp2-table.log
# Exit: 0 table written and reproduced everywhere; 1 no form fits or a value differs; 2 usage;
#       3 nothing measured (no probe, no device).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
build="$1" out="$2"
mkdir -p "$out" || { echo "exp2-table: cannot create $out" >&2; exit 2; }
targets="$build/gpu-check-targets.txt"
probe="$(awk '$2 == "attndev_exp2_probe" { print $3 }' "$targets" 2>/dev/null)"
if [[ -z "$probe" || ! -x "$probe" ]]; then
  echo "exp2-table: FAIL: attndev_exp2_probe not built ($targets; build attndev_gpu_targets)"
  exit 3
fi
table="$out/ex2.approx.ftz.f32.table"
"$probe" --out "$table" >"$out/exp2-table.log" 2>&1
rc=$?
grep '^exp2-table:' "$out/exp2-table.log"
case $rc in
  0) ;;
  77) echo "exp2-table: FAIL: nothing measured (no CUDA device)"; exit 3 ;;
  *) echo "exp2-table: FAIL (exit $rc; see $out/exp2-table.log)"; exit 1 ;;
esac
bytes="$(stat -c %s "$table" 2>/dev/null || echo 0)"
if [[ ! -s "$table" || "$bytes" -gt $((16 * 1024 * 1024 + 4096)) ]]; then
  echo "exp2-table: FAIL: $table missing or too large ($bytes bytes)"
  exit 1
fi
echo "exp2-table: PASS ($bytes bytes)"
