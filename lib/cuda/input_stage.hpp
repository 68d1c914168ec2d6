// The emulator's input stage, applied on the host before any kernel sees the data (plain C++:
// the host-only faithful test uses it too, so the GPU path and its check cannot drift apart).
//
// R_input of every element of Q, K, V (a no-op for inputs the producer already rounded); under
// ScalePlacement::query the scale is folded into Q first, Q' = R_input(q * scale), the product
// taken in double, and S is not scaled again. Mirrors lib/attention/attention.cpp make_problem.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda {

struct StagedInputs {
  std::vector<double> q;     // (B, H, N_q, d)
  std::vector<double> k;     // (B, H, N_kv, d)
  std::vector<double> v;     // (B, H, N_kv, d)
  double scale = 1.0;        // the softmax scale: options.scale or 1/sqrt(d)
  bool scale_scores = true;  // false when the scale went into Q
};

inline StagedInputs apply_input_stage(const numerics::PrecisionPolicy& policy,
                                      const attention::Inputs& in,
                                      const attention::Options& options) {
  StagedInputs out;
  out.scale = options.scale ? *options.scale : 1.0 / std::sqrt(static_cast<double>(in.q.cols));
  out.scale_scores = options.scale_placement != attention::ScalePlacement::query;
  const double q_factor = out.scale_scores ? 1.0 : out.scale;
  auto stage = [&](const std::vector<double>& x, double factor) {
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      r[i] = policy.round(numerics::Stage::input, x[i] * factor);
    return r;
  };
  out.q = stage(in.q.data, q_factor);
  out.k = stage(in.k.data, 1.0);
  out.v = stage(in.v.data, 1.0);
  return out;
}

}  // namespace attndev::cuda
