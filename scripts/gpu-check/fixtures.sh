#!/usr/bin/env bash
# gpu-check group fixtures: PyTorch's CUDA SDPA kernels (FLASH_ATTENTION, EFFICIENT, CUDNN, MATH)
# and attndev's flash2-tc on inputs in safetensors, bf16 and fp16, N 256 and 1024, d 64 and 128,
# causal and not (tools/tc_probe/torch_fixtures.py; the golden is recomputed from the inputs by
# whoever reads them). One line per case.
# needs: torch
#
# Usage: scripts/gpu-check/fixtures.sh BUILD_DIR OUT_DIR
#   OUT_DIR  receives fixtures/<case>/{inputs,flash,efficient,cudnn,math,flash2-tc}.safetensors
# Environment: PYTHON (default python3): an interpreter with CUDA PyTorch.
# Exit: 0 every fixture written (at most 16 MiB); 1 a kernel failed or too large; 2 usage;
#       3 nothing written (no CUDA PyTorch, no attndev).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
build="$1" out="$2"
here="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out/fixtures" || { echo "fixtures: cannot create $out/fixtures" >&2; exit 2; }
attndev="$(awk '$2 == "attndev" { print $3 }' "$build/gpu-check-targets.txt" 2>/dev/null)"
if [[ -z "$attndev" || ! -x "$attndev" ]]; then
  echo "fixtures: FAIL: attndev not built in $build (gpu-check-targets.txt)"
  exit 3
fi
"${PYTHON:-python3}" "$here/tools/tc_probe/torch_fixtures.py" "$out/fixtures" --attndev "$attndev" \
  >"$out/fixtures.log" 2>&1
rc=$?
grep '^fixtures:' "$out/fixtures.log"
case $rc in
  0) echo "fixtures: PASS" ;;
  77) echo "fixtures: FAIL: nothing written (no CUDA PyTorch)"; exit 3 ;;
  *) echo "fixtures: FAIL (exit $rc; see $out/fixtures.log)"; exit 1 ;;
esac
