// AdamW (decoupled weight decay) over fp32 master weights, with warm-up + cosine learning rate and
// global-norm gradient clipping. State and update arithmetic are double; the updated master weight
// is rounded once to the master format, so fp32 training keeps true fp32 masters.
#pragma once

#include <vector>

#include "numerics/format.hpp"
#include "train/config_types.hpp"
#include "train/layers.hpp"

namespace attndev::train {

class AdamW {
 public:
  AdamW(const AdamWConfig& cfg, const std::vector<Param*>& params, int total_steps);
  double lr_at(int step) const;  // step counts from 0
  // Global L2 norm of the gradients, summed over params in order (a fixed reduction order).
  static double grad_norm(const std::vector<Param*>& params);
  // One update at `step` from the gradients (already unscaled). Returns the norm before clipping.
  double step(int step, numerics::Format master);

 private:
  AdamWConfig cfg_;
  std::vector<Param*> params_;
  std::vector<Mat> m_, v_;
  int total_steps_;
};

}  // namespace attndev::train
