#include "train/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "numerics/round.hpp"

namespace attndev::train {

AdamW::AdamW(const AdamWConfig& cfg, const std::vector<Param*>& params, int total_steps)
    : cfg_(cfg), params_(params), total_steps_(std::max(1, total_steps)) {
  for (const Param* p : params_) {
    m_.push_back(Mat::Zero(p->value.rows(), p->value.cols()));
    v_.push_back(Mat::Zero(p->value.rows(), p->value.cols()));
  }
}

double AdamW::lr_at(int step) const {
  if (step < cfg_.warmup_steps) return cfg_.lr * double(step + 1) / double(cfg_.warmup_steps);
  const int decay_steps = std::max(1, total_steps_ - cfg_.warmup_steps);
  const double progress = std::min(1.0, double(step - cfg_.warmup_steps) / decay_steps);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return cfg_.lr * (cfg_.min_lr_ratio + (1.0 - cfg_.min_lr_ratio) * cosine);
}

double AdamW::grad_norm(const std::vector<Param*>& params) {
  double sum = 0.0;
  for (const Param* p : params)
    for (Eigen::Index i = 0; i < p->grad.size(); ++i) sum += p->grad.data()[i] * p->grad.data()[i];
  return std::sqrt(sum);
}

double AdamW::step(int step, numerics::Format master) {
  const double norm = grad_norm(params_);
  const double clip = cfg_.grad_clip > 0 && norm > cfg_.grad_clip ? cfg_.grad_clip / norm : 1.0;
  const double lr = lr_at(step);
  const double bc1 = 1.0 - std::pow(cfg_.beta1, step + 1);
  const double bc2 = 1.0 - std::pow(cfg_.beta2, step + 1);
  for (std::size_t k = 0; k < params_.size(); ++k) {
    Param& p = *params_[k];
    double* w = p.value.data();
    const double* g = p.grad.data();
    double* m = m_[k].data();
    double* v = v_[k].data();
    const double decay = p.decay ? cfg_.weight_decay : 0.0;
    for (Eigen::Index i = 0; i < p.value.size(); ++i) {
      const double gi = g[i] * clip;
      m[i] = cfg_.beta1 * m[i] + (1.0 - cfg_.beta1) * gi;
      v[i] = cfg_.beta2 * v[i] + (1.0 - cfg_.beta2) * gi * gi;
      const double update = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + cfg_.eps);
      w[i] = numerics::round_to(master, w[i] * (1.0 - lr * decay) - lr * update);
    }
  }
  return norm;
}

}  // namespace attndev::train
