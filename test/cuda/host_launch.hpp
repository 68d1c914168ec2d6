// A host launch shim: runs an element- or row-parallel kernel body (an ATTNDEV_HD function of
// (params, ThreadIndex), lib/cuda/grid.hpp) for every block and thread index of a launch, the
// grid computed as the launcher computes it. Kernels whose threads do not communicate (no shared
// memory, barriers or shuffles) give the same result in any order of threads, so a sequential
// loop is a faithful stand-in for the device's scheduling; kernels that communicate go through
// the race-checking simulator (tc_host_sim.hpp) instead.
#pragma once

#include <cstddef>

#include "cuda/grid.hpp"

namespace attndev::cuda::tests {

// A one-dimensional launch over `work` items of `threads` threads per block (grid_for's grid:
// ceil(work / threads) blocks, at least one). Returns the number of threads run.
template <class Body>
std::size_t host_launch_1d(std::size_t work, unsigned threads, Body&& body) {
  const std::size_t blocks = work == 0 ? 1 : (work + threads - 1) / threads;
  ThreadIndex t;
  t.grid_dim = {static_cast<unsigned>(blocks), 1, 1};
  t.block_dim = {threads, 1, 1};
  std::size_t ran = 0;
  for (std::size_t b = 0; b < blocks; ++b)
    for (unsigned x = 0; x < threads; ++x) {
      t.block = {static_cast<unsigned>(b), 0, 0};
      t.thread = {x, 0, 0};
      body(t);
      ++ran;
    }
  return ran;
}

}  // namespace attndev::cuda::tests
