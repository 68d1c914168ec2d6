#!/usr/bin/env bash
# gpu-check group tc-mma: the tensor cores' own instructions against attndev's tensor-core model
# (lib/numerics/mma.hpp), bit for bit: mma.sync m16n8k16 bf16/fp16 on every GPU, m16n8k32 e4m3 on
# sm_89 and newer, wgmma m64n8k16 bf16 on sm_90 (tools/tc_probe/tc_mma_probe.cu). One line per
# instruction with the identical share; fails below 100%.
#
# Usage: scripts/gpu-check/tc-mma.sh BUILD_DIR OUT_DIR
#   BUILD_DIR  a CUDA build holding attndev_gpu_targets (gpu-check-targets.txt names the probe)
#   OUT_DIR    tc-mma.json (shares and the first mismatches) and tc-mma.log are written here
# Exit: 0 every share 100%; 1 a mismatch; 2 usage; 3 nothing compared (no probe, no device).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
build="$1" out="$2"
mkdir -p "$out" || { echo "tc-mma: cannot create $out" >&2; exit 2; }
targets="$build/gpu-check-targets.txt"
probe="$(awk '$2 == "attndev_tc_mma_probe" { print $3 }' "$targets" 2>/dev/null)"
if [[ -z "$probe" || ! -x "$probe" ]]; then
  echo "tc-mma: FAIL: attndev_tc_mma_probe not built ($targets; build the target attndev_gpu_targets)"
  exit 3
fi
"$probe" --out "$out/tc-mma.json" >"$out/tc-mma.log" 2>&1
rc=$?
grep '^tc-mma:' "$out/tc-mma.log"
case $rc in
  0) echo "tc-mma: PASS" ;;
  77) echo "tc-mma: FAIL: nothing compared (no CUDA device)"; exit 3 ;;
  *) echo "tc-mma: FAIL (exit $rc; first mismatches in $out/tc-mma.json)"; exit 1 ;;
esac
