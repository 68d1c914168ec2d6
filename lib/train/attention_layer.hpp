// Causal multi-head self-attention whose core runs through the emulator: the forward is
// attention::run and the backward attention::backward, with the run's algorithm and policy, so
// the numerics under study are inside the training loop.
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "train/layers.hpp"

namespace attndev::train {

class AttentionLayer {
 public:
  AttentionLayer(const std::string& name, int dim, int heads);
  // x: (B*T, C) -> (B*T, C); rows are token-major (b*T + t).
  Mat forward(const Mat& x, int seq, const Numerics& num);
  Mat backward(const Mat& dy, const Numerics& num);
  Linear qkv;   // (C, 3C): columns [Q | K | V], head h at columns h*d .. h*d+d-1 of each
  Linear proj;  // (C, C)
  int heads;

 private:
  attention::Inputs inputs_;  // Q, K, V: (B, H, T, d) rounded to the policy's input format
  attention::Output output_;  // O: (B, H, T, d), lse
  attention::Options options_;
  int seq_ = 0;
};

}  // namespace attndev::train
