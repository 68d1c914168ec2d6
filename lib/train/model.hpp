// The small decoder-only transformer of the weight-deviation study: token + position embedding,
// L pre-LN blocks (x += attn(ln1(x)); x += mlp(ln2(x))), a final layer norm and an untied LM head.
#pragma once

#include <cstdint>
#include <vector>

#include "train/attention_layer.hpp"
#include "train/config_types.hpp"
#include "train/layers.hpp"

namespace attndev::train {

struct Block {
  Block(int index, const ModelConfig& cfg);
  LayerNorm ln1;
  AttentionLayer attn;
  LayerNorm ln2;
  Mlp mlp;
};

class Model {
 public:
  explicit Model(const ModelConfig& cfg);
  // GPT-2-style init: N(0, 0.02^2), residual projections N(0, (0.02/sqrt(2L))^2), norms 1/0,
  // biases 0; values rounded to the master-weight format.
  void init(std::uint64_t seed, numerics::Format master);

  // inputs, targets: (B*T) token ids, row b*T + t. Returns the mean cross entropy. A tap sees
  // every attention call of this forward (AttentionCall); it cannot change the result.
  double forward(const std::vector<int>& inputs, const std::vector<int>& targets, int seq,
                 const Numerics& num, const AttentionTap* tap = nullptr);
  // Accumulates the gradients of loss_scale * loss into every Param::grad.
  void backward(double loss_scale, const Numerics& num);

  // Every parameter, in a fixed order (the order of snapshots and of the optimizer).
  std::vector<Param*> params();
  void zero_grad();
  const ModelConfig& config() const { return cfg_; }

 private:
  ModelConfig cfg_;
  Embedding emb_;
  std::vector<Block> blocks_;
  LayerNorm lnf_;
  LmHead head_;
};

}  // namespace attndev::train
