# The CUDA toolkit's host-callable conversions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) as a third
# rounding oracle. Compiled by the host compiler against the toolkit headers: no GPU needed, but
# the toolkit is, so only when CUDA was found; its test cases join numerics_tests.
if(ATTNDEV_HAVE_CUDA)
  target_sources(numerics_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_oracle/test_cuda_oracles.cpp)
  target_include_directories(numerics_tests PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
else()
  # Without the toolkit the oracle is absent: one entry says so and ctest reports it as skipped
  # (exit 77), so a CPU-only run shows the check it did not make instead of hiding it.
  add_test(NAME numerics_cuda_oracles_absent
           COMMAND sh -c "echo 'SKIP: no CUDA toolkit in this build: the CUDA conversion oracle (test/numerics/cuda_oracle) was not compiled'; exit 77")
  set_tests_properties(numerics_cuda_oracles_absent PROPERTIES LABELS numerics SKIP_RETURN_CODE 77)
endif()
