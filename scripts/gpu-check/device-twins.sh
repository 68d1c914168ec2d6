#!/usr/bin/env bash
# Group device-twins: every emulated twin on the device (baseline, flash1, flash2 x every preset
# and its unfused variant x odd, masked, non-dividing and scale-in-Q cases) bit for bit against
# the CPU emulator, and the GPU test's twin cases (ctest entry cuda_gpu_kernels runs in cuda-tests).
source "$(dirname "$0")/_common.bash"
run_to twins.txt "$check_tool" device --part twins
rc=$?
check "$(verdict_of "$rc")" "device twins" "twins.txt"
forward_tool_lines twins.txt "device twins"
finish_group
