// Independent reference for rounding tests: written differently from lib/numerics on purpose.
//
// round.hpp works on bit patterns and magic-number adds; the oracle here finds the two
// neighbouring values of |x| in the format with frexp/floor/ldexp, and picks one by comparing x
// with their midpoint (exact: the midpoint of two values of <= 25 bits is a double). Ties go to
// the neighbour whose encoding is even, read from the integer significand, not from bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>

#include "numerics/format.hpp"

namespace attndev::numerics::testing {

// e8m0: the two powers of two around x, the nearer one; a tie goes to the one whose biased
// exponent (its encoding) is even. Nothing below 2^-127 exists, so smaller values (and +0) give it.
inline double oracle_round_e8m0(const FormatTraits& t, double x, Overflow overflow) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(x) || std::signbit(x)) return nan;
  if (std::isinf(x)) return overflow == Overflow::saturate ? t.max_finite : nan;
  if (x <= std::ldexp(1.0, -127)) return std::ldexp(1.0, -127);
  int e2 = 0;
  std::frexp(x, &e2);
  const double lo = std::ldexp(1.0, e2 - 1), hi = std::ldexp(1.0, e2);
  const double mid = lo * 1.5;
  double r = x < mid ? lo : x > mid ? hi : ((e2 - 1 + 127) % 2 == 0 ? lo : hi);
  if (x == lo) r = lo;
  if (r > t.max_finite) return overflow == Overflow::saturate ? t.max_finite : nan;
  return r;
}

// One oracle rounding. overflow follows the Overflow contract in format.hpp (formats without inf
// and NaN saturate whatever the rule; unsigned formats have no negative values).
inline double oracle_round(Format f, double x, Overflow overflow) {
  const FormatTraits t = traits(f);
  if (f == Format::fp64 || std::isnan(x)) return x;
  if (t.kind == FormatKind::scale) return oracle_round_e8m0(t, x, overflow);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  if (!t.has_sign && std::signbit(x)) return x == 0.0 ? 0.0 : nan;
  const bool saturates = overflow == Overflow::saturate || (!t.has_inf && !t.has_nan);
  auto overflowed = [&]() {
    if (saturates) return std::copysign(t.max_finite, x);
    if (overflow == Overflow::to_inf && t.has_inf) return std::copysign(inf, x);
    return nan;
  };
  if (std::isinf(x)) {
    if (saturates) return std::copysign(t.max_finite, x);
    return t.has_inf ? x : nan;
  }
  const double a = std::fabs(x);
  if (a == 0.0) return t.kind == FormatKind::integer ? 0.0 : x;
  int e2 = 0;
  std::frexp(a, &e2);  // a in [2^(e2-1), 2^e2)
  const int binade = std::max(e2 - 1, t.min_exponent);
  const double quantum = std::ldexp(1.0, binade - t.fraction_bits);
  const double units = std::floor(a / quantum);  // a / quantum is exact (power of two)
  const double lo = units * quantum;
  const double hi = (units + 1.0) * quantum;
  const double mid = lo + quantum / 2;
  double r;
  if (a < mid) {
    r = lo;
  } else if (a > mid) {
    r = hi;
  } else {
    // In the significand count "units", even means the last fraction bit is 0.
    r = std::fmod(units, 2.0) == 0.0 ? lo : hi;
  }
  if (r > t.max_finite) return overflowed();
  if (t.kind == FormatKind::integer && r == 0.0) return 0.0;
  return std::copysign(r, x);
}

// Same bits or both NaN.
inline bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Seed from ATTNDEV_TEST_SEED when set, else the given default; always printed so a failure can
// be replayed.
inline std::uint64_t test_seed(const char* what, std::uint64_t fallback) {
  std::uint64_t seed = fallback;
  if (const char* env = std::getenv("ATTNDEV_TEST_SEED")) seed = std::strtoull(env, nullptr, 0);
  std::cout << what << ": seed " << seed << " (set ATTNDEV_TEST_SEED to replay)\n";
  return seed;
}

// Log-uniform magnitudes with exponents in [lo, hi], random 52-bit fraction, random sign.
inline double log_uniform_double(std::mt19937_64& rng, int lo, int hi) {
  std::uniform_int_distribution<int> exp_dist(lo, hi);
  const std::uint64_t fraction_bits = rng() >> 12;
  const double m = 1.0 + std::ldexp(static_cast<double>(fraction_bits), -52);
  const double v = std::ldexp(m, exp_dist(rng));
  return (rng() & 1u) ? -v : v;
}

inline std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

}  // namespace attndev::numerics::testing
