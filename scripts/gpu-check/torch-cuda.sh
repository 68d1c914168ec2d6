#!/usr/bin/env bash
# Group torch-cuda: PyTorch's CUDA backends (FLASH_ATTENTION, EFFICIENT, CUDNN, MATH) as external
# variants beside attndev's emulated twins and CUDA kernels (configs/validation/torch-cuda.json).
# needs: torch
source "$(dirname "$0")/_common.bash"
rm -rf "$out/torch-cuda"
run_to torch-cuda.log "$attndev_bin" run configs/validation/torch-cuda.json -o "$out/torch-cuda"
rc=$?
check "$(verdict_of "$rc")" "torch cuda backends" "torch-cuda.log"
[[ -f "$out/torch-cuda/summary.md" ]] && cp "$out/torch-cuda/summary.md" "$out/torch-cuda.md"
finish_group
