# GPU tests: one executable registered with add_test (not catch_discover_tests, which would run it
# at build time). Without a device it exits 77 and ctest reports it as skipped, never passed.
if(TARGET attndev_cuda)
  add_executable(cuda_gpu_kernels ${CMAKE_CURRENT_LIST_DIR}/gpu_kernels.cpp)
  target_link_libraries(cuda_gpu_kernels PRIVATE ${ATTNDEV_TEST_LIBS} Catch2::Catch2)
  target_include_directories(cuda_gpu_kernels PRIVATE ${PROJECT_SOURCE_DIR}/lib
                             ${PROJECT_SOURCE_DIR}/test)
  add_test(NAME cuda_gpu_kernels COMMAND cuda_gpu_kernels)
  set_tests_properties(cuda_gpu_kernels PROPERTIES LABELS "gpu;cuda" SKIP_RETURN_CODE 77
                       TIMEOUT 600)
endif()
