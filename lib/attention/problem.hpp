// The validated problem every backend computes: argument checks and the input stage, defined
// once. attention::run() and the CUDA backend (lib/cuda/cuda_backend.cpp) both start here, so a
// config fails the same way on either backend and both see the same rounded Q, K, V and scales.
#pragma once

#include <cstdint>
#include <memory>

#include "attention/attention.hpp"
#include "attention/rows/params.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention {

// Everything an algorithm needs, after validation and after the input stage has been applied:
// q, k, v hold R_input values (q already multiplied by the scale under ScalePlacement::query).
struct Problem {
  numerics::PrecisionPolicy policy;
  Shape shape;
  bool causal = false;
  int block_r = 64;
  int block_c = 64;
  int threads = 1;
  std::uint64_t schedule_seed = 0;
  // The softmax scale as a real number (options.scale, or 1/sqrt(d)). The algorithms use it
  // rounded as their arithmetic holds it (score_scale(), scale_log2()) and, unrounded, in lse.
  double scale = 1.0;
  // True when the scale was folded into Q (ScalePlacement::query): scores are not multiplied.
  bool scale_in_query = false;
  Tensor q;  // (B, H, N_q, d)
  Tensor k;  // (B, H, N_kv, d)
  Tensor v;  // (B, H, N_kv, d)
  // Options::mask, its biases as the score arithmetic holds them (mask_for_policy); null: none.
  std::shared_ptr<const Mask> mask;

  // The scale as the score arithmetic holds it: a scalar in the score accumulator's format (a
  // kernel receives softmax_scale as a float; a framework multiplies by it in fp32 opmath).
  double score_scale() const;
  // R_stats(scale * log2(e)), the product in double (FA-2's host code computes
  // softmax_scale * M_LOG2E, then a float cast); R_stats(log2(e)) when the scale is in Q.
  double scale_log2() const;
  // What the row functions need besides the tensors (rows/params.hpp).
  rows::Params row_params() const;
};

// Throws std::invalid_argument with a message naming the bad field for impossible arguments
// (tile < 1, mismatched shapes, d < 1, a non-finite scale, threads < 0, ...).
void validate(const Inputs& inputs, const Options& options);

// validate(), then the input stage: Q, K, V as stored in memory in the policy's input format (a
// no-op for inputs that the producer already rounded). Under ScalePlacement::query the scale is
// folded into Q here: Q' = R_input(q * scale), the product taken in double.
Problem make_problem(const numerics::PrecisionPolicy& policy, const Inputs& inputs,
                     const Options& options);

}  // namespace attndev::attention
