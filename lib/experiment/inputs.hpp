// Reproducible attention inputs from a counter-based RNG.
//
// The value at (seed, tensor, b, h, row, col) is a pure function of those six numbers (Philox),
// so it never depends on threads, tiling, shards or the order points are run in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "attention/attention.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

struct Distribution {
  enum class Kind : unsigned char { normal, uniform, outlier };
  Kind kind = Kind::normal;
  double a = 0.0;  // normal: mean; uniform: lo
  double b = 1.0;  // normal: std;  uniform: hi
  // outlier (FA-3 Table 3): N(0,1) + N(0, outlier_std^2) * Bernoulli(outlier_prob)
  double outlier_std = 10.0;
  double outlier_prob = 0.001;

  std::string describe() const;  // e.g. "normal(0,1)", "uniform(-1,1)", "outlier(std=10,p=0.001)"
  friend bool operator==(const Distribution&, const Distribution&) = default;
};

// Parses "normal", "normal(0,1)", "uniform(-1,1)", "outlier", "outlier(10,0.001)".
bool parse_distribution(std::string_view text, Distribution& out, std::string& error);

enum class TensorId : std::uint32_t { q = 0, k = 1, v = 2 };

// One sample of the distribution at a coordinate, before rounding.
double sample(const Distribution& dist, std::uint64_t seed, TensorId tensor, int b, int h, int row,
              int col);

// Q, K, V of the shape, each element sampled then rounded once to `input_format`. The golden and
// every variant see these same rounded values.
attention::Inputs make_inputs(const attention::Shape& shape, const Distribution& dist,
                              std::uint64_t seed, numerics::Format input_format);

}  // namespace attndev::experiment
