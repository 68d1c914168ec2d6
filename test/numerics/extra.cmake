# The CUDA toolkit's host-callable conversions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) as a third
# rounding oracle. Compiled by the host compiler against the toolkit headers: no GPU needed, but
# the toolkit is, so only when CUDA was found; its test cases join numerics_tests.
if(ATTNDEV_HAVE_CUDA)
  target_sources(numerics_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_oracle/test_cuda_oracles.cpp)
  target_include_directories(numerics_tests PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
endif()
