// Shared by the attention tests: inputs from the project's one generator (lib/inputs, below the
// experiment runner), policy lookup and exact comparisons.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "attention/attention.hpp"
#include "inputs/random_inputs.hpp"
#include "numerics/policy.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::testing {

// Q, K, V ~ N(0, stddev^2) from the project's one generator (lib/inputs), rounded to f.
inline Inputs random_inputs(const Shape& s, std::uint64_t seed, numerics::Format f,
                            double stddev = 1.0) {
  return inputs::make_inputs(s, inputs::Distribution::normal(0.0, stddev), seed, f);
}

// FA-3 Table 3's input distribution, N(0,1) + N(0, outlier_std^2) * Bernoulli(p).
inline inputs::Distribution outlier(double outlier_std = 10.0, double p = 0.001) {
  return {inputs::Distribution::Kind::outlier, 0.0, 1.0, outlier_std, p};
}

// Q, K, V drawn from FA-3 Table 3's distribution, rounded to f.
inline Inputs outlier_inputs(const Shape& s, std::uint64_t seed, numerics::Format f) {
  return inputs::make_inputs(s, outlier(), seed, f);
}

inline numerics::PrecisionPolicy preset(const char* name) {
  const numerics::PolicyPreset* p = numerics::find_preset(name);
  REQUIRE(p != nullptr);
  return p->policy;
}

inline bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Number of elements of o and lse whose bits differ (NaN == NaN only with the same payload).
inline std::size_t bit_differences(const Output& a, const Output& b) {
  REQUIRE(a.o.data.size() == b.o.data.size());
  REQUIRE(a.lse.size() == b.lse.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.o.data.size(); ++i) n += !same_bits(a.o.data[i], b.o.data[i]);
  for (std::size_t i = 0; i < a.lse.size(); ++i) n += !same_bits(a.lse[i], b.lse[i]);
  return n;
}

inline double max_abs(const Tensor& t) {
  double m = 0;
  for (double x : t.data) m = std::max(m, std::fabs(x));
  return m;
}

// max |a - b|; NaN anywhere makes it NaN so a broken result can never look accurate.
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.data.size() == b.data.size());
  double m = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double e = std::fabs(a.data[i] - b.data[i]);
    if (std::isnan(e)) return e;
    m = std::max(m, e);
  }
  return m;
}

// Root mean square of a - b (same shape, not empty).
inline double rmse(const Tensor& a, const Tensor& b) {
  REQUIRE(a.data.size() == b.data.size());
  REQUIRE(!a.data.empty());
  double s = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    s += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
  return std::sqrt(s / static_cast<double>(a.data.size()));
}

inline std::string describe(const Shape& s, const Options& o) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) +
         " Nq=" + std::to_string(s.seq_q) + " Nkv=" + std::to_string(s.seq_kv) +
         " d=" + std::to_string(s.head_dim) + " Br=" + std::to_string(o.block_r) +
         " Bc=" + std::to_string(o.block_c) + (o.causal ? " causal" : "") +
         (o.scale_placement == ScalePlacement::query ? " scale@query" : "");
}

}  // namespace attndev::attention::testing
