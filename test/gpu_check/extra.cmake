# scripts/gpu-check.sh's failure paths (no GPU, a bad nvidia-smi answer, a driver older than the
# toolkit, missing prerequisites, skipped or failing steps) with a fake nvidia-smi and fake build
# trees: runs on any machine. Not labelled `cuda`: gpu-check.sh itself runs `ctest -L cuda`.
add_test(NAME gpu_check_script
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.sh
                 ${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh)
set_tests_properties(gpu_check_script PROPERTIES LABELS "gpu_check" TIMEOUT 300)
# The device groups scripts/gpu-check/{tc-mma,exp2-table,fixtures,twins}.sh with stub probes, a stub
# attndev, nvidia-smi and python: every pass/fail/nothing-compared path, before a real device run.
add_test(NAME gpu_check_groups COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/groups_test.sh
                                       ${PROJECT_SOURCE_DIR})
set_tests_properties(gpu_check_groups PROPERTIES LABELS "gpu_check" TIMEOUT 120)
