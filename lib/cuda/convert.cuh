// Moves between the emulator's tensors (doubles holding values of a format) and the element
// types kernels read and write. Both directions are exact by construction: narrowing is only
// applied to values already representable in the target type (inputs in the input format, P
// rounded to prob before the store), and widening to double is always exact.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>

#include "cuda/cuda_check.cuh"

namespace attndev::cuda {

__device__ inline void store_as(double x, __nv_bfloat16& out) {
  out = __double2bfloat16(x);
}
__device__ inline void store_as(double x, __half& out) {
  out = __double2half(x);
}
__device__ inline void store_as(double x, float& out) {
  out = static_cast<float>(x);
}
__device__ inline void store_as(double x, double& out) {
  out = x;
}

__device__ inline double widen(__nv_bfloat16 x) {
  return static_cast<double>(__bfloat162float(x));
}
__device__ inline double widen(__half x) {
  return static_cast<double>(__half2float(x));
}
__device__ inline double widen(float x) {
  return static_cast<double>(x);
}
__device__ inline double widen(double x) {
  return x;
}

template <class T>
__global__ void narrow_kernel(const double* in, T* out, std::size_t n) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) store_as(in[idx], out[idx]);
}

template <class T>
__global__ void widen_kernel(const T* in, double* out, std::size_t n) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) out[idx] = widen(in[idx]);
}

template <class T>
void narrow(const double* in, T* out, std::size_t n) {
  constexpr unsigned kThreads = 256;
  narrow_kernel<<<grid_for(n, kThreads), kThreads>>>(in, out, n);
  ATTNDEV_CUDA_CHECK_LAUNCH();
}

template <class T>
void widen(const T* in, double* out, std::size_t n) {
  constexpr unsigned kThreads = 256;
  widen_kernel<<<grid_for(n, kThreads), kThreads>>>(in, out, n);
  ATTNDEV_CUDA_CHECK_LAUNCH();
}

}  // namespace attndev::cuda
