// Round-to-nearest-even from double (or float) straight to any Format.
//
// Rounding goes directly from the double's bits to the target's precision: a double is never
// rounded through float on its way to bf16/fp16/fp8, which would round twice and can differ from
// a single rounding at exact ties (e.g. 1 + 2^-8 + 2^-30 -> bf16).
//
// The functions are header-only and ATTNDEV_HD so that the CUDA kernels round bit-identically.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "format.hpp"
#include "host_device.hpp"

namespace attndev::numerics {

ATTNDEV_HD inline std::uint64_t bits_of(double x) {
  std::uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
ATTNDEV_HD inline double double_from_bits(std::uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}
ATTNDEV_HD inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
ATTNDEV_HD inline float float_from_bits(std::uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// Default overflow behaviour: IEEE formats go to inf; OCP e4m3 (no inf) goes to NaN unless a
// policy asks for saturation.
ATTNDEV_HD constexpr Overflow default_overflow(Format f) {
  return traits(f).has_inf ? Overflow::to_inf : Overflow::to_nan;
}

// Rounds x to the nearest value of format f, ties to even. Subnormals of the target are produced
// (never flushed), NaN stays NaN, signed zero keeps its sign.
ATTNDEV_HD inline double round_to(Format f, double x, Overflow overflow) {
  if (f == Format::fp64) return x;
  const FormatTraits t = traits(f);
  if (x != x) return x;
  const double a = fabs(x);
  if (a == INFINITY) {
    if (t.has_inf) return x;
    return overflow == Overflow::saturate ? copysign(t.max_finite, x) : NAN;
  }
  double r;
  if (a < t.min_normal()) {
    // Target subnormal range: the quantum is fixed at 2^(emin - fraction_bits). Adding
    // C = 2^(emin - fraction_bits + 52) puts a into C's binade, where the double's own RNE rounds
    // at exactly that quantum; subtracting C is exact. Requires no fast-math (no reassociation).
    const double c = FormatTraits::pow2(t.min_exponent - t.fraction_bits + 52);
    r = (a + c) - c;
  } else {
    // Normal range: RNE on the bit pattern. Adding (half - 1 + lsb) and truncating rounds half
    // to even; a carry out of the fraction correctly bumps the exponent (and may reach inf).
    std::uint64_t u = bits_of(a);
    const int drop = 52 - t.fraction_bits;
    const std::uint64_t lsb = (u >> drop) & 1u;
    u += (std::uint64_t{1} << (drop - 1)) - 1u + lsb;
    u &= ~((std::uint64_t{1} << drop) - 1u);
    r = double_from_bits(u);
  }
  if (r > t.max_finite) {
    switch (overflow) {
      case Overflow::to_inf:
        r = INFINITY;
        break;
      case Overflow::to_nan:
        return NAN;
      case Overflow::saturate:
        r = t.max_finite;
        break;
    }
  }
  return copysign(r, x);
}

ATTNDEV_HD inline double round_to(Format f, double x) { return round_to(f, x, default_overflow(f)); }

// Float in, float out: float -> double is exact, so this is one rounding from the float value.
// (fp64 is returned unchanged: a float is already an fp64 value.)
ATTNDEV_HD inline float round_to(Format f, float x) {
  return static_cast<float>(round_to(f, static_cast<double>(x), default_overflow(f)));
}

// Is x exactly representable in f (finite, in range)?
ATTNDEV_HD inline bool representable(Format f, double x) {
  return x == x && round_to(f, x, Overflow::to_nan) == x;
}

}  // namespace attndev::numerics
