// Shared by the attention tests: a local deterministic input generator (the tests must not depend
// on lib/experiment's Philox inputs), policy lookup and exact comparisons.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::testing {

// splitmix64 of (seed, stream, index): a pure function, so the values never depend on order.
inline std::uint64_t hash3(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (stream + 1) * 0xD1B54A32D192ED03ull ^
                    (index + 1) * 0x8CB92BA72F3D8DD7ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits.
inline double uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return static_cast<double>(hash3(seed, stream, index) >> 11) * 0x1.0p-53;
}

// Roughly N(0, 1): the sum of four uniforms, centred and scaled to unit variance.
inline double normalish(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  double s = 0;
  for (std::uint64_t r = 0; r < 4; ++r) s += uniform01(seed, stream * 4 + r, index);
  return (s - 2.0) * std::sqrt(3.0);
}

inline Tensor random_tensor(int b, int h, int n, int d, std::uint64_t seed, std::uint64_t stream,
                            numerics::Format f, double stddev = 1.0) {
  Tensor t(b, h, n, d);
  for (std::size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = numerics::round_to(f, stddev * normalish(seed, stream, i));
  return t;
}

inline Inputs random_inputs(const Shape& s, std::uint64_t seed, numerics::Format f,
                            double stddev = 1.0) {
  Inputs in;
  in.q = random_tensor(s.batch, s.heads, s.seq_q, s.head_dim, seed, 0, f, stddev);
  in.k = random_tensor(s.batch, s.heads, s.seq_kv, s.head_dim, seed, 1, f, stddev);
  in.v = random_tensor(s.batch, s.heads, s.seq_kv, s.head_dim, seed, 2, f, stddev);
  return in;
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

inline std::string describe(const Shape& s, const Options& o) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) +
         " Nq=" + std::to_string(s.seq_q) + " Nkv=" + std::to_string(s.seq_kv) +
         " d=" + std::to_string(s.head_dim) + " Br=" + std::to_string(o.block_r) +
         " Bc=" + std::to_string(o.block_c) + (o.causal ? " causal" : "") +
         (o.scale_placement == ScalePlacement::query ? " scale@query" : "");
}

}  // namespace attndev::attention::testing
