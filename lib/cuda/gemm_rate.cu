// The GPU's dense matmul rate, measured with cuBLAS in the same process and with the same
// timing rules as the attention kernels: the yardstick for flash2-tc's throughput.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.cuh"
#include "cuda/timing.cuh"

namespace attndev::cuda {

namespace {
// Any values do: the rate of a GEMM does not depend on them (no NaN/denormal slow paths on
// tensor cores), but zeros could let a future library take a shortcut, so fill with a pattern.
__global__ void fill_pattern(unsigned short* p, std::size_t n, unsigned short one) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) p[idx] = static_cast<unsigned short>(one + (idx % 7));
}
}  // namespace

GemmRate measure_gemm_rate(numerics::Format input, int m, int n, int k,
                           const TimingOptions& timing) {
  if (input != numerics::Format::bf16 && input != numerics::Format::fp16)
    throw std::invalid_argument("gemm rate: input must be bf16 or fp16");
  if (m < 1 || n < 1 || k < 1) throw std::invalid_argument("gemm rate: m, n, k must be >= 1");
  const cudaDataType_t type = input == numerics::Format::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  // Small positive values near 1 in either format (0x3f80 bf16 = 1, 0x3c00 fp16 = 1).
  const unsigned short one = input == numerics::Format::bf16 ? 0x3f80 : 0x3c00;
  const std::size_t a_count = static_cast<std::size_t>(m) * k,
                    b_count = static_cast<std::size_t>(k) * n;
  DeviceBuffer<unsigned short> a(a_count), b(b_count);
  DeviceBuffer<float> c(static_cast<std::size_t>(m) * n);
  fill_pattern<<<grid_for(a_count, 256), 256>>>(a.get(), a_count, one);
  ATTNDEV_CUDA_CHECK_LAUNCH();
  fill_pattern<<<grid_for(b_count, 256), 256>>>(b.get(), b_count, one);
  ATTNDEV_CUDA_CHECK_LAUNCH();
  CublasHandle handle;
  const float alpha = 1.f, beta = 0.f;
  // bf16/fp16 operands with fp32 output and fp32 accumulation: the same operand and
  // accumulator types as flash2-tc's two products.
  auto launch = [&] {
    ATTNDEV_CUBLAS_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha,
                                      a.get(), type, k, b.get(), type, k, &beta, c.get(),
                                      CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  GemmRate rate;
  rate.runtime_ms = median_launch_ms(launch, timing);
  rate.tflops = 2.0 * m * n * k / (rate.runtime_ms * 1e-3) / 1e12;
  return rate;
}

}  // namespace attndev::cuda
