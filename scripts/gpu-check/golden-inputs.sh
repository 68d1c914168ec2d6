#!/usr/bin/env bash
# Group golden-inputs: the run-level cuda backend's inputs and golden against the CPU's. The
# input kernel against inputs::make_inputs bit for bit (every distribution and input format, two
# shapes), and the device golden against attention::golden: 1e-12 relative (the bar) and bit for
# bit (what its design gives), up to N = 32768 at d = 128.
source "$(dirname "$0")/_common.bash"
run_to inputs.txt "$check_tool" device --part inputs
rc=$?
check "$(verdict_of "$rc")" "device inputs" "inputs.txt"
forward_tool_lines inputs.txt "device inputs"
run_to golden.txt "$check_tool" device --part golden --golden-n "${GOLDEN_N:-32768}"
rc=$?
check "$(verdict_of "$rc")" "device golden" "golden.txt"
forward_tool_lines golden.txt "device golden"
finish_group
