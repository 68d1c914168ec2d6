// A kernel body's view of where it runs: block and thread indices and the launch's extents as
// plain values, so that the body of an element- or row-parallel kernel is an ATTNDEV_HD function
// of (params, ThreadIndex). The __global__ wrapper passes this_thread(); a host test runs the same
// body for every (block, thread) of the launch through test/cuda/host_launch.hpp. Kernels that use
// shared memory, barriers or shuffles (flash2-tc) go through the race-checking simulator instead.
//
// Plain C++ (no CUDA header): host-only tests include it in every build.
#pragma once

#include <cstddef>

#include "numerics/host_device.hpp"

namespace attndev::cuda {

struct Extent3 {
  unsigned x = 1, y = 1, z = 1;
};

struct ThreadIndex {
  Extent3 block;      // blockIdx
  Extent3 thread;     // threadIdx
  Extent3 grid_dim;   // gridDim
  Extent3 block_dim;  // blockDim
  // The x-linear index of this thread over the whole grid (64-bit: grids cover > 2^31 elements).
  ATTNDEV_HD std::size_t global_x() const {
    return static_cast<std::size_t>(block.x) * block_dim.x + thread.x;
  }
};

#if defined(__CUDACC__)
__device__ inline ThreadIndex this_thread() {
  return {{blockIdx.x, blockIdx.y, blockIdx.z},
          {threadIdx.x, threadIdx.y, threadIdx.z},
          {gridDim.x, gridDim.y, gridDim.z},
          {blockDim.x, blockDim.y, blockDim.z}};
}
#endif

}  // namespace attndev::cuda
