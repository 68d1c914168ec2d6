// GPU timing: CUDA events around each launch, warm-up launches first, the median of the repeats,
// and an L2-sized buffer overwritten before every repeat so that each one starts with a cold
// cache (otherwise K/V of a small problem would stay in L2 and inflate the rate).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.cuh"

namespace attndev::cuda {

class CudaEvent {
 public:
  CudaEvent() { ATTNDEV_CUDA_CHECK(cudaEventCreate(&event_)); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (event_) cudaEventDestroy(event_);
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Median milliseconds of `launch` (work enqueued on the default stream) over timing.repeats.
inline double median_launch_ms(const std::function<void()>& launch, const TimingOptions& timing) {
  if (timing.repeats < 1) throw std::invalid_argument("timing: repeats must be >= 1");
  if (timing.warmup < 0) throw std::invalid_argument("timing: warmup must be >= 0");
  int device = 0, l2_bytes = 0;
  ATTNDEV_CUDA_CHECK(cudaGetDevice(&device));
  ATTNDEV_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  // Twice the L2: a write of that much evicts every line the previous launch left behind.
  DeviceBuffer<unsigned char> flush(timing.flush_l2 ? 2 * static_cast<std::size_t>(l2_bytes) : 0);

  for (int w = 0; w < timing.warmup; ++w) launch();
  ATTNDEV_CUDA_CHECK(cudaDeviceSynchronize());

  CudaEvent start, stop;
  std::vector<double> ms;
  for (int r = 0; r < timing.repeats; ++r) {
    if (flush.size() > 0) ATTNDEV_CUDA_CHECK(cudaMemsetAsync(flush.get(), r & 0xff, flush.bytes()));
    ATTNDEV_CUDA_CHECK(cudaEventRecord(start.get()));
    launch();
    ATTNDEV_CUDA_CHECK(cudaEventRecord(stop.get()));
    ATTNDEV_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float elapsed = 0.f;
    ATTNDEV_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start.get(), stop.get()));
    ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  return n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

}  // namespace attndev::cuda
