// AdamW (decoupled weight decay) over fp32 master weights, with warm-up + cosine learning rate and
// global-norm gradient clipping. State and update arithmetic are double; the updated master weight
// is rounded once to the master format, so fp32 training keeps true fp32 masters.
#pragma once

#include <vector>

#include "numerics/format.hpp"
#include "train/layers.hpp"

namespace attndev::train {

struct AdamWConfig {
  double lr = 3e-3;
  double min_lr_ratio = 0.1;  // cosine decays to lr * min_lr_ratio at the last step
  int warmup_steps = 20;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double grad_clip = 1.0;  // max global L2 norm; <= 0 disables clipping
};

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
