// How much per-row scratch the faithful kernels (faithful_flash.cuh) take, apart from the kernels
// so that the device memory estimate (lib/experiment/spec/device_memory.cpp) reads the launcher's
// own rule without the row functions. Plain C++ and ATTNDEV_HD.
#pragma once

#include "attention/attention.hpp"
#include "attention/rows/params.hpp"
#include "numerics/host_device.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda::faithful {

// Doubles of scratch per query row: the row's scores of one K/V block, and the block's P V
// where it is formed apart (flash1; flash2 under the framework model or the vector form, and the
// fp8 flash algorithms: flash2_rows' block_local; the vector forms of both PyTorch CPU builds). The
// streamed baseline (baseline-fp8 too) needs none (its sums live in the output row).
ATTNDEV_HD inline int scratch_per_row(attention::Algorithm a, const attention::rows::Params& p) {
  if (a == attention::Algorithm::baseline || a == attention::Algorithm::baseline_fp8) return 0;
  const bool block_pv = a == attention::Algorithm::flash1 || attention::is_fp8_algorithm(a) ||
                        p.policy.model == numerics::Model::framework ||
                        numerics::torch_cpu_lanes(p.policy.softmax) > 0;  // a vector form
  return p.block_c + (block_pv ? p.head_dim : 0);
}

}  // namespace attndev::cuda::faithful
