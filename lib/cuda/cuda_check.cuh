// Every CUDA and cuBLAS call goes through a check that throws std::runtime_error naming the
// file:line and the library's error string, and device memory is owned by RAII buffers so that a
// throw in the middle of a run leaks nothing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace attndev::cuda {

[[noreturn]] inline void throw_cuda_error(const char* what, const char* file, int line,
                                          const std::string& detail) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what +
                           " failed: " + detail);
}

inline void check_cuda(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess)
    throw_cuda_error(
        what, file, line,
        std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")");
}

inline void check_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw_cuda_error(
        what, file, line,
        std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")");
}

}  // namespace attndev::cuda

#define ATTNDEV_CUDA_CHECK(expr) ::attndev::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
#define ATTNDEV_CUBLAS_CHECK(expr) ::attndev::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface at once, execution errors at the
// next synchronizing call (which is checked too).
#define ATTNDEV_CUDA_CHECK_LAUNCH() ATTNDEV_CUDA_CHECK(cudaGetLastError())

namespace attndev::cuda {

// Owns `count` elements of T in device global memory.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) ATTNDEV_CUDA_CHECK(cudaMalloc(&ptr_, count_ * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void upload(const T* host, std::size_t count) {
    if (count > count_) throw std::logic_error("DeviceBuffer::upload beyond the buffer");
    if (count > 0)
      ATTNDEV_CUDA_CHECK(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(T* host, std::size_t count) const {
    if (count > count_) throw std::logic_error("DeviceBuffer::download beyond the buffer");
    if (count > 0)
      ATTNDEV_CUDA_CHECK(cudaMemcpy(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
  }

 private:
  void release() {
    // cudaFree in a destructor must not throw; an error here is reported by the next call.
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

class CublasHandle {
 public:
  CublasHandle() { ATTNDEV_CUBLAS_CHECK(cublasCreate(&handle_)); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_) cublasDestroy(handle_);
  }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// Grid size for `work` items of `block` threads each, checked against the launch limit.
inline unsigned grid_for(std::size_t work, unsigned block) {
  const std::size_t g = (work + block - 1) / block;
  if (g > 0x7fffffffu) throw std::invalid_argument("problem too large for one launch");
  return static_cast<unsigned>(g == 0 ? 1 : g);
}

}  // namespace attndev::cuda
