// `attndev bench --backend cuda`: one point's parts on the GPU, each checked on a small problem
// first (docs/CONTRIBUTING.md #12) and then timed as a run waits for it (wall time of the call:
// upload, kernel, download; median of the repeats): the input draw, the golden, the emulated
// twins of flash2 and baseline, and the CUDA kernels flash2-tc and the cuBLAS baseline.
#pragma once

#include <cstdint>
#include <string>

#include "attention/attention.hpp"

namespace attndev::app {

struct CudaBenchArgs {
  attention::Shape shape;
  bool causal = false;
  int block_r = 128, block_c = 64;  // the twins'; flash2-tc runs 128x64 where instantiated
  std::string policy = "kernel-bf16";
  int repeats = 3;
  bool json = false;
};

// Throws UsageError (exit 2) before anything runs when this build or machine has no device;
// CommandExit{1} after printing when a part failed its check.
void run_cuda_bench(const CudaBenchArgs& args);

}  // namespace attndev::app
