// The test vectors of the tensor-core probe (host side, shared by the probe and its CPU test):
// random and adversarial A, B, C for one instruction shape, and the model's D for each output
// element (numerics/mma.hpp's dot over the instruction's k, C as the chain's start).
//
// Generators (each a named kind, so a mismatch report says which one found it):
//   random       |x| ~ 2^U(-8, 8), random signs: ordinary GEMM data
//   spread       exponents over the format's whole normal range: alignment shifts every term out
//   cancel       pairs a_i b_i = -a_j b_j plus a small remainder: cancellation to the last bits
//   ties         C and products placed so that a term's bits fall exactly at the truncation point
//   subnormal    operands and C near and below the formats' normal limits
//   special      a sprinkling of inf and NaN operands and C (canonical NaN, inf - inf)
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "numerics/encode.hpp"
#include "numerics/format.hpp"
#include "numerics/mma.hpp"
#include "numerics/round.hpp"

namespace attndev::tc_probe {

inline constexpr const char* kGenerators[] = {"random", "spread",    "cancel",
                                              "ties",   "subnormal", "special"};

// One instruction's operands: A (M, K) row-major, B (K, N) row-major, C (M, N) fp32, as values.
struct MmaCase {
  int m = 16, n = 8, k = 16;
  numerics::Format format = numerics::Format::bf16;
  std::string generator;
  std::vector<double> a, b, c;  // (m, k), (k, n), (m, n)
};

inline double draw(std::mt19937_64& rng, numerics::Format f, const std::string& gen, int lo,
                   int hi) {
  const numerics::FormatTraits t = numerics::traits(f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double sign = u(rng) < 0.5 ? -1.0 : 1.0;
  double e = lo + (hi - lo) * u(rng);
  if (gen == "spread") e = t.min_exponent + (t.max_exponent - 1 - t.min_exponent) * u(rng);
  if (gen == "subnormal") e = t.min_exponent - t.fraction_bits * u(rng) + 1.0;
  double x = sign * std::exp2(e) * (1.0 + u(rng));
  if (gen == "special" && u(rng) < 0.02) x = u(rng) < 0.5 ? sign * INFINITY : NAN;
  return numerics::round_to(f, x, numerics::Overflow::saturate);
}

// A case of shape (m, n, k) in format f from generator `gen` with a seeded stream.
inline MmaCase make_case(int m, int n, int k, numerics::Format f, const std::string& gen,
                         std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  MmaCase c;
  c.m = m, c.n = n, c.k = k, c.format = f, c.generator = gen;
  c.a.resize(static_cast<std::size_t>(m) * k);
  c.b.resize(static_cast<std::size_t>(k) * n);
  c.c.resize(static_cast<std::size_t>(m) * n);
  for (double& x : c.a) x = draw(rng, f, gen, -8, 8);
  for (double& x : c.b) x = draw(rng, f, gen, -8, 8);
  for (double& x : c.c)
    x = draw(rng, numerics::Format::fp32, gen == "special" ? gen : "random", -4, 12);
  if (gen == "cancel")  // b's second half mirrors the first with a's signs flipped
    for (int i = 0; i < m; ++i)
      for (int kk = k / 2; kk < k; ++kk) c.a[i * k + kk] = -c.a[i * k + kk - k / 2];
  if (gen == "cancel")
    for (int kk = k / 2; kk < k; ++kk)
      for (int j = 0; j < n; ++j) c.b[kk * n + j] = c.b[(kk - k / 2) * n + j];
  if (gen == "ties")  // C a power of two far above the products: every product truncates
    for (double& x : c.c) x = std::ldexp(x < 0 ? -1.0 : 1.0, 20);
  return c;
}

// The model's D for every element of the case, through profile `dot` with operands `op`.
inline std::vector<double> model_d(const MmaCase& c, numerics::mma::DotFunction dot,
                                   const numerics::mma::Operands& op) {
  std::vector<double> d(static_cast<std::size_t>(c.m) * c.n);
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j)
      d[static_cast<std::size_t>(i) * c.n + j] =
          dot(op, c.a.data() + static_cast<std::ptrdiff_t>(i) * c.k, 1, c.b.data() + j, c.n, c.k,
              c.c[static_cast<std::size_t>(i) * c.n + j], numerics::mma::Output::fp32);
  return d;
}

// Bits of D as the device returns it (fp32), and whether two D's are the same: NaN equal to NaN
// only with the canonical payload the model gives (0x7FFFFFFF).
inline bool same_d(double model, float device) {
  const std::uint32_t m = numerics::bits_of(static_cast<float>(model));
  const std::uint32_t g = numerics::bits_of(device);
  return m == g;
}

}  // namespace attndev::tc_probe
