// Layers of the small transformer: forward with a cache of what backward needs, backward that
// returns the input gradient and accumulates parameter gradients.
//
// Activations are (rows, features) matrices with rows = batch * seq (token-major: row b*T + t).
// Each layer keeps the cache of its last forward; a layer is used once per step, so forward and
// backward pair up. Parameter gradients accumulate (+=) until the trainer zeroes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"
#include "train/dense.hpp"

namespace attndev::train {

struct Param {
  std::string name;  // safetensors key, e.g. "blocks.0.attn.qkv.weight"
  Mat value;
  Mat grad;
  bool decay = true;  // AdamW weight decay applies (matrices and embeddings, not norms/biases)
};

// How a step computes: training precision for the dense parts, attention algorithm and policy.
struct Numerics {
  Precision precision = Precision::fp64;
  attention::Algorithm algorithm = attention::Algorithm::baseline;
  numerics::PrecisionPolicy policy = numerics::kGoldenPolicy;
  int block_r = 16;
  int block_c = 16;
  int threads = 1;
};

// Standard normal sample that is a pure function of (seed, name, index): initialization never
// depends on the order parameters are created in.
double init_normal(std::uint64_t seed, const std::string& name, std::uint64_t index);
// Fills p.value with N(0, std^2) from init_normal, rounded to `f`; zeroes p.grad.
void init_param(Param& p, std::uint64_t seed, double std, numerics::Format f);
Param make_param(std::string name, int rows, int cols, bool decay);

// Token + learned position embedding.  tokens: (B*T) ids -> (B*T, C)
class Embedding {
 public:
  Embedding(int vocab, int context, int dim);
  Mat forward(const std::vector<int>& tokens, int seq, const Numerics& num);
  void backward(const Mat& dy);
  Param tok, pos;  // (V, C), (T_max, C)

 private:
  std::vector<int> tokens_;
  int seq_ = 0;
};

class LayerNorm {
 public:
  LayerNorm(std::string name, int dim);
  Mat forward(const Mat& x, const Numerics& num);  // (R, C) -> (R, C)
  Mat backward(const Mat& dy, const Numerics& num);
  Param gamma, beta;  // (1, C)

 private:
  Mat xhat_;                  // (R, C) normalized input
  std::vector<double> rstd_;  // (R)
};

class Linear {
 public:
  Linear(std::string name, int in, int out, bool with_bias);
  Mat forward(const Mat& x, const Numerics& num);  // (R, in) -> (R, out)
  Mat backward(const Mat& dy, const Numerics& num);
  Param weight;  // (in, out)
  Param bias;    // (1, out); empty when the layer has none
  bool has_bias;

 private:
  Mat x_;
};

// fc -> GELU (tanh form) -> proj.
class Mlp {
 public:
  Mlp(const std::string& name, int dim, int hidden);
  Mat forward(const Mat& x, const Numerics& num);
  Mat backward(const Mat& dy, const Numerics& num);
  Linear fc, proj;

 private:
  Mat pre_;  // (R, hidden) GELU input
};

// Final projection to the vocabulary and mean cross entropy over the rows.
class LmHead {
 public:
  LmHead(int dim, int vocab);
  // Returns the mean loss (double, from the logits as stored).
  double forward(const Mat& x, const std::vector<int>& targets, const Numerics& num);
  // Gradient of loss_scale * loss with respect to x.
  Mat backward(double loss_scale, const Numerics& num);
  Linear out;

 private:
  Mat probs_;  // (R, V) softmax of the logits
  std::vector<int> targets_;
};

}  // namespace attndev::train
