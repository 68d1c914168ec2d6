// Causal multi-head self-attention whose core runs through the emulator: the forward is
// attention::run and the backward attention::backward, with the run's algorithm and policy, so
// the numerics under study are inside the training loop.
#pragma once

#include <functional>
#include <string>

#include "attention/attention.hpp"
#include "train/layers.hpp"

namespace attndev::train {

// What one attention call saw and produced, handed to a tap on the steps that asked for it
// (in-model comparison, captures). Read-only: a tap cannot change what training computes.
struct AttentionCall {
  int layer = 0;
  const attention::Inputs& raw;       // Q, K, V (B, H, T, d) as the qkv projection produced them,
                                      // before the policy's input rounding
  const attention::Inputs& inputs;    // the same rounded to the policy's input format (what ran)
  const attention::Output& output;    // the driving attention's O (B, H, T, d) and lse
  const attention::Options& options;  // causal, tiles, threads, scale (default 1/sqrt(d))
};
using AttentionTap = std::function<void(const AttentionCall&)>;

class AttentionLayer {
 public:
  AttentionLayer(const std::string& name, int index, int dim, int heads);
  // x: (B*T, C) -> (B*T, C); rows are token-major (b*T + t). With a tap, the raw Q, K, V are
  // kept as well and the tap is called once after the driving attention ran (costs nothing
  // without one).
  Mat forward(const Mat& x, int seq, const Numerics& num, const AttentionTap* tap = nullptr);
  Mat backward(const Mat& dy, const Numerics& num);
  Linear qkv;   // (C, 3C): columns [Q | K | V], head h at columns h*d .. h*d+d-1 of each
  Linear proj;  // (C, C)
  int index;    // block number, for taps
  int heads;

 private:
  attention::Inputs inputs_;  // Q, K, V: (B, H, T, d) rounded to the policy's input format
  attention::Output output_;  // O: (B, H, T, d), lse
  attention::Options options_;
  int seq_ = 0;
};

}  // namespace attndev::train
