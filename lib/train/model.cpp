#include "train/model.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace attndev::train {

Block::Block(int index, const ModelConfig& cfg)
    : ln1("blocks." + std::to_string(index) + ".ln1", cfg.d_model),
      attn("blocks." + std::to_string(index) + ".attn", index, cfg.d_model, cfg.heads),
      ln2("blocks." + std::to_string(index) + ".ln2", cfg.d_model),
      mlp("blocks." + std::to_string(index) + ".mlp", cfg.d_model, cfg.mlp_hidden) {}

Model::Model(const ModelConfig& cfg)
    : cfg_(cfg),
      emb_(cfg.vocab, cfg.context, cfg.d_model),
      lnf_("ln_f", cfg.d_model),
      head_(cfg.d_model, cfg.vocab) {
  if (cfg.vocab < 2 || cfg.d_model < 1 || cfg.layers < 1 || cfg.context < 1 || cfg.mlp_hidden < 1)
    throw std::invalid_argument("Model: every size must be positive (vocab >= 2)");
  blocks_.reserve(std::size_t(cfg.layers));
  for (int l = 0; l < cfg.layers; ++l) blocks_.emplace_back(l, cfg);
}

void Model::init(std::uint64_t seed, numerics::Format master) {
  constexpr double kStd = 0.02;
  const double residual_std = kStd / std::sqrt(2.0 * cfg_.layers);
  for (Param* p : params()) {
    const bool is_norm_or_bias = !p->decay;
    const bool residual_proj = p->name.ends_with(".proj.weight");
    if (is_norm_or_bias) {
      p->value.setConstant(p->name.ends_with("ln1.weight") || p->name.ends_with("ln2.weight") ||
                                   p->name == "ln_f.weight"
                               ? 1.0
                               : 0.0);
      p->grad.setZero();
    } else {
      init_param(*p, seed, residual_proj ? residual_std : kStd, master);
    }
  }
}

double Model::forward(const std::vector<int>& inputs, const std::vector<int>& targets, int seq,
                      const Numerics& num, const AttentionTap* tap) {
  const numerics::Format act = activation_format(num.precision);
  Mat x = emb_.forward(inputs, seq, num);  // (B*T, C)
  for (Block& b : blocks_) {
    x += b.attn.forward(b.ln1.forward(x, num), seq, num, tap);
    round_all(act, x);
    x += b.mlp.forward(b.ln2.forward(x, num), num);
    round_all(act, x);
  }
  return head_.forward(lnf_.forward(x, num), targets, num);
}

void Model::backward(double loss_scale, const Numerics& num) {
  const numerics::Format act = activation_format(num.precision);
  Mat dx = lnf_.backward(head_.backward(loss_scale, num), num);  // (B*T, C)
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    dx += it->ln2.backward(it->mlp.backward(dx, num), num);
    round_all(act, dx);
    dx += it->ln1.backward(it->attn.backward(dx, num), num);
    round_all(act, dx);
  }
  emb_.backward(dx);
}

std::vector<Param*> Model::params() {
  std::vector<Param*> r{&emb_.tok, &emb_.pos};
  for (Block& b : blocks_) {
    for (Param* p : {&b.ln1.gamma, &b.ln1.beta, &b.attn.qkv.weight, &b.attn.qkv.bias,
                     &b.attn.proj.weight, &b.attn.proj.bias, &b.ln2.gamma, &b.ln2.beta,
                     &b.mlp.fc.weight, &b.mlp.fc.bias, &b.mlp.proj.weight, &b.mlp.proj.bias})
      r.push_back(p);
  }
  r.push_back(&lnf_.gamma);
  r.push_back(&lnf_.beta);
  r.push_back(&head_.out.weight);
  return r;
}

void Model::zero_grad() {
  for (Param* p : params()) p->grad.setZero();
}

}  // namespace attndev::train
