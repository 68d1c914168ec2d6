# The CUDA toolkit's host-callable conversions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) as a third
# rounding oracle. Compiled by the host compiler against the toolkit headers: no GPU needed, but
# the toolkit is, so only when CUDA was found.
if(ATTNDEV_HAVE_CUDA)
  attndev_add_test(numerics_test_cuda_oracles
                   SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/numerics/cuda_oracle/test_cuda_oracles.cpp
                   LABELS numerics)
  target_include_directories(numerics_test_cuda_oracles PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
endif()
