// The stored form of a measured exp2 (ex2.approx.ftz.f32), evaluated the same way on the host
// (twins' Exp2, the table's writer) and on the device (the probe checks there that the stored
// form reproduces every value it measured): host and device share these functions, and the
// reference they build on (numerics::exp2_f32) gives the same bits on both.
//
// Hypotheses (the probe measures which holds best, twins/exp2_table.cpp):
//   reference         y(x) = numerics::exp2_f32(x): the device differs from a faithful 2^x in
//                     few places; every difference is an exception
//   fraction(Q, mode) y(x) = 2^i * g(k): x quantized to a multiple of 2^-Q (floor, toward zero
//                     or to nearest), i the integer part of that, k its fraction in units of
//                     2^-Q, g(k) the device's result at -1 + k 2^-Q times 2 (stored as int8 ulp
//                     differences from the reference there); results below 2^-126 flush to +0
// Either way the values the hypothesis misses are stored as exceptions (x bits, y bits), sorted.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "numerics/host_device.hpp"
#include "numerics/math.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::twins {

enum class Exp2Quant : std::uint8_t { floor, toward_zero, nearest };

inline constexpr const char* exp2_quant_name(Exp2Quant q) {
  return q == Exp2Quant::floor ? "floor" : q == Exp2Quant::toward_zero ? "toward_zero" : "nearest";
}

// The measured domain: every float a softmax can hand to exp2 (x <= 0, down to -127, past the
// flush-to-zero limit at -126) and the small positive arguments an FFMA's rounding can give
// (x in [0, 1)). Index order: -0 to -127 by increasing magnitude, then +0 to the float below 1.
inline constexpr std::uint32_t kExp2NegFirst = 0x80000000u;  // -0
inline constexpr std::uint32_t kExp2NegLast = 0xC2FE0000u;   // -127
inline constexpr std::uint32_t kExp2PosLast = 0x3F7FFFFFu;   // the float below 1
inline constexpr std::uint64_t kExp2NegCount = kExp2NegLast - kExp2NegFirst + 1;
inline constexpr std::uint64_t kExp2DomainSize = kExp2NegCount + kExp2PosLast + 1;

ATTNDEV_HD inline std::uint32_t exp2_domain_bits(std::uint64_t index) {
  return index < kExp2NegCount ? static_cast<std::uint32_t>(kExp2NegFirst + index)
                               : static_cast<std::uint32_t>(index - kExp2NegCount);
}
ATTNDEV_HD inline bool exp2_in_domain(std::uint32_t bits) {
  return bits <= kExp2PosLast || (bits >= kExp2NegFirst && bits <= kExp2NegLast);
}
ATTNDEV_HD inline std::uint64_t exp2_domain_index(std::uint32_t bits) {
  return bits >= kExp2NegFirst ? bits - kExp2NegFirst : kExp2NegCount + bits;
}

ATTNDEV_HD inline float exp2_reference(float x) {
  return numerics::exp2_f32(x);
}

// The grid point of fraction table entry k: -1 + k 2^-q (exact in float for q <= 24).
ATTNDEV_HD inline float exp2_grid_x(int q, std::uint32_t k) {
  return static_cast<float>(ldexp(static_cast<double>(k), -q) - 1.0);
}

// g(k) as stored: the reference at the grid point moved by delta[k] ulps (the measured value).
ATTNDEV_HD inline float exp2_grid_value(int q, const std::int8_t* delta, std::uint32_t k) {
  const std::uint32_t ref = numerics::bits_of(exp2_reference(exp2_grid_x(q, k)));
  return numerics::float_from_bits(ref +
                                   static_cast<std::uint32_t>(static_cast<std::int32_t>(delta[k])));
}

// fraction(q, mode)'s prediction for x in the domain, g(k) given by g_of(k).
template <class G>
ATTNDEV_HD float exp2_fraction_predict(float x, int q, Exp2Quant mode, const G& g_of) {
  const double scaled = ldexp(static_cast<double>(x), q);  // exact
  const double n = mode == Exp2Quant::floor         ? floor(scaled)
                   : mode == Exp2Quant::toward_zero ? trunc(scaled)
                                                    : rint(scaled);
  const std::int64_t ni = static_cast<std::int64_t>(n);
  const std::int64_t one = std::int64_t{1} << q;
  const std::int64_t i = ni >= 0 ? ni / one : -((-ni + one - 1) / one);  // floor(ni / 2^q)
  const std::uint32_t k = static_cast<std::uint32_t>(ni - i * one);
  // g(k) = 2^(k 2^-q - 1) as measured, so 2^(i + k 2^-q) = g(k) * 2^(i + 1), exact in double.
  const double y = ldexp(static_cast<double>(g_of(k)), static_cast<int>(i + 1));
  return y < 0x1p-126 ? 0.0f : static_cast<float>(y);
}

// A table as stored: fraction_bits = 0 selects the reference hypothesis.
struct Exp2TableView {
  int fraction_bits = 0;
  Exp2Quant quant = Exp2Quant::floor;
  const std::int8_t* delta = nullptr;    // (2^fraction_bits)
  const std::uint32_t* exc_x = nullptr;  // (n_exc) x bits, increasing
  const std::uint32_t* exc_y = nullptr;  // (n_exc)
  std::uint64_t n_exc = 0;
};

struct Exp2GridOf {
  int q;
  const std::int8_t* delta;
  ATTNDEV_HD float operator()(std::uint32_t k) const { return exp2_grid_value(q, delta, k); }
};

// The hypothesis alone, without the exceptions.
ATTNDEV_HD inline float exp2_table_base(const Exp2TableView& t, float x) {
  if (t.fraction_bits == 0) return exp2_reference(x);
  return exp2_fraction_predict(x, t.fraction_bits, t.quant, Exp2GridOf{t.fraction_bits, t.delta});
}

// The stored value for an x in the domain.
ATTNDEV_HD inline float exp2_table_value(const Exp2TableView& t, float x) {
  const std::uint32_t b = numerics::bits_of(x);
  std::uint64_t lo = 0, hi = t.n_exc;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (t.exc_x[mid] < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < t.n_exc && t.exc_x[lo] == b) return numerics::float_from_bits(t.exc_y[lo]);
  return exp2_table_base(t, x);
}

}  // namespace attndev::attention::twins
