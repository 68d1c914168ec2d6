// What every row function needs besides the tensors: one (batch, head)'s geometry, the tile
// width, the mask, the scale as each algorithm holds it, and the policy. Trivially copyable, so
// the CUDA kernels take it by value as a kernel argument; built once on the host from the
// validated problem (attention/problem.hpp), so the CPU and the GPU cannot hold different scales.
#pragma once

#include "numerics/policy.hpp"

namespace attndev::attention::rows {

struct Params {
  int seq_q = 0, seq_kv = 0, head_dim = 0;
  int block_c = 64;  // Bc: keys per K/V block (flash algorithms)
  bool causal = false;
  // False when the scale was folded into Q (ScalePlacement::query): scores are not multiplied.
  bool scale_scores = true;
  // The scale as the score arithmetic holds it, R_score_accum(scale): a kernel receives
  // softmax_scale as a float, a framework multiplies in fp32 opmath. baseline and flash1 multiply
  // their scores by it.
  double score_scale = 1.0;
  // R_stats(scale * log2(e)), the product taken in double (FA-2's host code computes
  // softmax_scale * M_LOG2E and passes a float); R_stats(log2(e)) when the scale is in Q.
  double scale_log2 = 1.0;
  // The scale as a real number, for flash2's lse = m * scale + log(l) (1 when folded into Q).
  double lse_scale = 1.0;
  numerics::PrecisionPolicy policy;
};

}  // namespace attndev::attention::rows
