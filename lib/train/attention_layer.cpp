#include "train/attention_layer.hpp"

#include <stdexcept>

#include "attention/backward.hpp"

namespace attndev::train {

AttentionLayer::AttentionLayer(const std::string& name, int index, int dim, int heads)
    : qkv(name + ".qkv", dim, 3 * dim, /*with_bias=*/true),
      proj(name + ".proj", dim, dim, /*with_bias=*/true),
      index(index),
      heads(heads) {
  if (heads < 1 || dim % heads != 0)
    throw std::invalid_argument("AttentionLayer: d_model must be a multiple of heads");
}

Mat AttentionLayer::forward(const Mat& x, int seq, const Numerics& num, const AttentionTap* tap) {
  const int rows = static_cast<int>(x.rows()), dim = static_cast<int>(x.cols());
  const int batch = rows / seq, d = dim / heads;
  seq_ = seq;
  const Mat z = qkv.forward(x, num);  // (B*T, 3C)
  inputs_.q = attention::Tensor(batch, heads, seq, d);
  inputs_.k = attention::Tensor(batch, heads, seq, d);
  inputs_.v = attention::Tensor(batch, heads, seq, d);
  // The kernel reads Q, K, V from memory in the policy's input format.
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < seq; ++t)
        for (int c = 0; c < d; ++c) {
          const Eigen::Index r = Eigen::Index(b) * seq + t;
          inputs_.q.at(b, h, t, c) = num.policy.round(numerics::Stage::input, z(r, h * d + c));
          inputs_.k.at(b, h, t, c) =
              num.policy.round(numerics::Stage::input, z(r, dim + h * d + c));
          inputs_.v.at(b, h, t, c) =
              num.policy.round(numerics::Stage::input, z(r, 2 * dim + h * d + c));
        }
  attention::Inputs raw;  // only on tapped steps
  if (tap) {
    raw.q = attention::Tensor(batch, heads, seq, d);
    raw.k = attention::Tensor(batch, heads, seq, d);
    raw.v = attention::Tensor(batch, heads, seq, d);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int t = 0; t < seq; ++t)
          for (int c = 0; c < d; ++c) {
            const Eigen::Index r = Eigen::Index(b) * seq + t;
            raw.q.at(b, h, t, c) = z(r, h * d + c);
            raw.k.at(b, h, t, c) = z(r, dim + h * d + c);
            raw.v.at(b, h, t, c) = z(r, 2 * dim + h * d + c);
          }
  }
  options_ = attention::Options{};
  options_.causal = true;
  options_.block_r = num.block_r;
  options_.block_c = num.block_c;
  options_.threads = num.threads;
  output_ = attention::run(num.algorithm, num.policy, inputs_, options_);
  if (tap) (*tap)(AttentionCall{index, raw, inputs_, output_, options_});
  Mat o(rows, dim);  // (B*T, C): heads side by side
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < seq; ++t)
        for (int c = 0; c < d; ++c)
          o(Eigen::Index(b) * seq + t, h * d + c) = output_.o.at(b, h, t, c);
  return proj.forward(o, num);
}

Mat AttentionLayer::backward(const Mat& dy, const Numerics& num) {
  const Mat d_o = proj.backward(dy, num);  // (B*T, C)
  const int dim = static_cast<int>(dy.cols());
  const int batch = static_cast<int>(dy.rows()) / seq_, d = dim / heads;
  attention::Tensor d_out(batch, heads, seq_, d);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < seq_; ++t)
        for (int c = 0; c < d; ++c)
          d_out.at(b, h, t, c) = d_o(Eigen::Index(b) * seq_ + t, h * d + c);
  const attention::Gradients g =
      attention::backward(num.algorithm, num.policy, inputs_, output_, d_out, options_);
  Mat dz(dy.rows(), 3 * dim);  // (B*T, 3C)
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < seq_; ++t)
        for (int c = 0; c < d; ++c) {
          const Eigen::Index r = Eigen::Index(b) * seq_ + t;
          dz(r, h * d + c) = g.dq.at(b, h, t, c);
          dz(r, dim + h * d + c) = g.dk.at(b, h, t, c);
          dz(r, 2 * dim + h * d + c) = g.dv.at(b, h, t, c);
        }
  round_all(activation_format(num.precision), dz);
  return qkv.backward(dz, num);
}

}  // namespace attndev::train
