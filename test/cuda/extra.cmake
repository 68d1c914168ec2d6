# The CUDA checks (faithful cases, bit comparisons, the flash2-tc rule) live with the check tool in
# tools/cuda_check/checks.hpp; the host test and the GPU test include them from there.
target_include_directories(cuda_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools)

# GPU tests: one executable registered with add_test (not catch_discover_tests, which would run it
# at build time). Without a device it exits 77 and ctest reports it as skipped, never passed.
if(TARGET attndev_cuda)
  add_executable(cuda_gpu_kernels ${CMAKE_CURRENT_LIST_DIR}/gpu_kernels.cpp)
  target_link_libraries(cuda_gpu_kernels PRIVATE attndev_catch_main ${ATTNDEV_TEST_LIBS})
  target_include_directories(cuda_gpu_kernels PRIVATE ${PROJECT_SOURCE_DIR}/lib
                             ${PROJECT_SOURCE_DIR}/test ${PROJECT_SOURCE_DIR}/tools)
  attndev_test_optimization(cuda_gpu_kernels cuda)
  add_test(NAME cuda_gpu_kernels COMMAND cuda_gpu_kernels)
  set_tests_properties(cuda_gpu_kernels PROPERTIES LABELS "gpu;cuda" SKIP_RETURN_CODE 77
                       TIMEOUT 600)
endif()

# What scripts/gpu-check.sh builds and runs, as one target: every CUDA test executable
# (test/cuda/test_*.cpp and cuda_gpu_kernels), the check tool and attndev, so that the script,
# CI's bundle-only build (scripts/clang-check.sh) and the test list cannot drift apart.
# gpu-check-targets.txt ("KIND NAME PATH" per line) tells the script where each one is and which
# executables must have ctest entries.
if(TARGET attndev_cuda)
  set(attndev_gpu_tests cuda_gpu_kernels cuda_tests)
  add_custom_target(attndev_gpu_targets)
  add_dependencies(attndev_gpu_targets ${attndev_gpu_tests} attndev_cuda attndev_cuda_check attndev
                   attndev_tc_mma_probe attndev_exp2_probe)
  set(attndev_gpu_lines "lib attndev_cuda $<TARGET_FILE:attndev_cuda>\n"
      "tool attndev_cuda_check $<TARGET_FILE:attndev_cuda_check>\n"
      "tool attndev_tc_mma_probe $<TARGET_FILE:attndev_tc_mma_probe>\n"
      "tool attndev_exp2_probe $<TARGET_FILE:attndev_exp2_probe>\n"
      "app attndev $<TARGET_FILE:attndev>\n")
  foreach(t ${attndev_gpu_tests})
    list(APPEND attndev_gpu_lines "test ${t} $<TARGET_FILE:${t}>\n")
  endforeach()
  string(REPLACE ";" "" attndev_gpu_lines "${attndev_gpu_lines}")
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/gpu-check-targets.txt CONTENT "${attndev_gpu_lines}")
endif()
