// Reproducible attention inputs from a counter-based RNG: the one generator of the project (the
// experiment runner, `attndev point` and `bench`, the CUDA checks and the tests all call it).
//
// The value at (seed, tensor, b, h, row, col) is a pure function of those six numbers (Philox),
// so it never depends on threads, tiling, shards or the order points are run in. Parsing a
// distribution from config text is config-facing and lives in lib/experiment (parse_distribution).
#pragma once

#include <cstdint>
#include <string>

#include "attention/attention.hpp"
#include "inputs/sample.hpp"
#include "numerics/format.hpp"

namespace attndev::inputs {

// The value a distribution names, with its text form (DistributionParams is what a kernel takes).
struct Distribution {
  using Kind = DistributionParams::Kind;
  Kind kind = Kind::normal;
  // channel: N(0, a^2) + b * c_col in Q and K, c_col ~ N(0,1) drawn once per (tensor, b, h,
  // column) and shared by every row: the channel-wise bias SageAttention (arXiv 2410.02367,
  // Sec. 3) reports in K (and SageAttention2 in Q), which a token mean removes; V is N(0, a^2).
  double a = 0.0;  // normal: mean; uniform: lo; channel: std of the tokens
  double b = 1.0;  // normal: std;  uniform: hi; channel: std of the channel biases
  // outlier (FA-3 Table 3): N(0,1) + N(0, outlier_std^2) * Bernoulli(outlier_prob)
  double outlier_std = 10.0;
  double outlier_prob = 0.001;

  // e.g. "normal(0,1)", "uniform(-1,1)", "outlier(std=10,p=0.001)", "channel(std=1,bias=5)"
  std::string describe() const;
  friend bool operator==(const Distribution&, const Distribution&) = default;

  static Distribution normal(double mean, double std) { return {Kind::normal, mean, std}; }
  static Distribution uniform(double lo, double hi) { return {Kind::uniform, lo, hi}; }
  DistributionParams params() const { return {kind, a, b, outlier_std, outlier_prob}; }
};

// One sample of the distribution at a coordinate, before rounding (sample_at in sample.hpp, the
// code the CUDA input kernel runs). Throws std::invalid_argument for a negative coordinate or
// b >= 2^24.
double sample(const Distribution& dist, std::uint64_t seed, TensorId tensor, int b, int h, int row,
              int col);

// One (batch, heads, rows, cols) tensor of the stream `tensor`, each element sampled then rounded
// once to `format` with input_overflow(format). Throws std::invalid_argument for a
// dimension < 1.
attention::Tensor make_tensor(int batch, int heads, int rows, int cols, const Distribution& dist,
                              std::uint64_t seed, TensorId tensor, numerics::Format format);

// Q, K, V of the shape (make_tensor of the q, k and v streams). The golden and every variant see
// these same rounded values.
attention::Inputs make_inputs(const attention::Shape& shape, const Distribution& dist,
                              std::uint64_t seed, numerics::Format input_format);

}  // namespace attndev::inputs
