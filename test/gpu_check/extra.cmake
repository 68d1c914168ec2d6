# scripts/gpu-check.sh's failure paths (no GPU, a bad nvidia-smi answer, a driver older than the
# toolkit, missing prerequisites, skipped or failing steps) with a fake nvidia-smi and fake build
# trees: runs on any machine. Not labelled `cuda`: gpu-check.sh itself runs `ctest -L cuda`.
add_test(NAME gpu_check_script
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.sh
                 ${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh)
set_tests_properties(gpu_check_script PROPERTIES LABELS "gpu_check" TIMEOUT 300)
