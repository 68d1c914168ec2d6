// Round-to-nearest-even from double (or float) straight to any Format.
//
// Rounding goes directly from the double's bits to the target's precision: a double is never
// rounded through float on its way to bf16/fp16/fp8, which would round twice and can differ from
// a single rounding at exact ties (e.g. 1 + 2^-8 + 2^-30 -> bf16).
//
// The float fast paths (round_to_bf16/fp16/tf32) give bit-identical results to the double path
// for every float input; they exist because the emulator rounds O(N^2) scores and probabilities,
// and a loop over them must vectorize (no calls, no frexp/ldexp, selects instead of branches).
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

// Default overflow behaviour: IEEE formats go to inf; OCP e4m3 and e8m0 (no inf) go to NaN unless
// a policy asks for saturation; formats with neither inf nor NaN (fp6, fp4, int8, int4) saturate.
ATTNDEV_HD constexpr Overflow default_overflow(Format f) {
  return traits(f).has_inf   ? Overflow::to_inf
         : traits(f).has_nan ? Overflow::to_nan
                             : Overflow::saturate;
}

namespace detail {

// 2^e for a normal double exponent (-1022 <= e <= 1023), from the bits: FormatTraits::pow2 is a
// loop meant for constant evaluation, too slow for a per-element path.
ATTNDEV_HD inline double pow2_normal(int e) {
  return double_from_bits(static_cast<std::uint64_t>(e + 1023) << 52);
}

// Round-to-nearest-even of a finite a >= 0 to the precision and subnormal quantum of t, with no
// upper exponent limit: the result may exceed t.max_finite (or even be 2^1024 = inf when a is
// near DBL_MAX); the caller applies the overflow rule. f must not be fp64.
ATTNDEV_HD inline double round_magnitude(const FormatTraits& t, double a) {
  if (a < pow2_normal(t.min_exponent)) {
    // Target subnormal range: the quantum is fixed at 2^(emin - fraction_bits). Adding
    // C = 2^(emin - fraction_bits + 52) puts a into C's binade, where the double's own RNE rounds
    // at exactly that quantum; subtracting C is exact. Requires no fast-math (no reassociation).
    const double c = pow2_normal(t.min_exponent - t.fraction_bits + 52);
    return (a + c) - c;
  }
  // Normal range: RNE on the bit pattern. Adding (half - 1 + lsb) and truncating rounds half to
  // even; a carry out of the fraction correctly bumps the exponent (and may reach inf's bits).
  std::uint64_t u = bits_of(a);
  const int drop = 52 - t.fraction_bits;
  const std::uint64_t lsb = (u >> drop) & 1u;
  u += (std::uint64_t{1} << (drop - 1)) - 1u + lsb;
  u &= ~((std::uint64_t{1} << drop) - 1u);
  return double_from_bits(u);
}

// The value a rounded magnitude r becomes under the overflow rule: r itself when in range.
// A format without inf cannot return inf, so to_inf there means NaN (OCP e4m3 non-saturating);
// a format with neither (fp6, fp4, the integers) can only saturate.
ATTNDEV_HD inline double apply_overflow(const FormatTraits& t, double r, Overflow overflow) {
  if (r <= t.max_finite) return r;
  if (overflow == Overflow::saturate || (!t.has_inf && !t.has_nan)) return t.max_finite;
  if (overflow == Overflow::to_inf && t.has_inf) return INFINITY;
  return NAN;
}

// e8m0 (no zero, no sign, no fraction): a positive x rounds to the nearer of the two powers of
// two around it (the tie 1.5 * 2^e to the even encoding, as the generic path does with 0
// fraction bits); +0 and values below 2^-127 become 2^-127, the nearest value there is; a
// negative value is NaN.
ATTNDEV_HD inline double round_e8m0(const FormatTraits& t, double x, Overflow overflow) {
  if (x != x || copysign(1.0, x) < 0.0) return NAN;
  if (x == INFINITY) return overflow == Overflow::saturate ? t.max_finite : NAN;
  if (x <= t.min_normal()) return t.min_normal();
  return apply_overflow(t, round_magnitude(t, x), overflow);
}

}  // namespace detail

// Rounds x to the nearest value of format f, ties to even. Subnormals of the target are produced
// (never flushed), NaN stays NaN, signed zero keeps its sign. Infinite x stays infinite in formats
// with inf; saturate clamps it to +-max finite like cvt.satfinite; in e4m3 otherwise it is NaN.
// Formats without inf and NaN (fp6, fp4, int8, int4) saturate whatever the rule, and keep a NaN
// input a NaN (they cannot hold it; a quantizer counts it). Unsigned formats (e8m0, ue4m3) give
// NaN for a negative value; e8m0 has no zero (detail::round_e8m0). Integer results are never -0.
ATTNDEV_HD_OUTLINE double round_to(Format f, double x, Overflow overflow) {
  if (f == Format::fp64) return x;
  const FormatTraits t = traits(f);
  if (x != x) return x;
  if (t.kind == FormatKind::scale) return detail::round_e8m0(t, x, overflow);
  if (!t.has_sign && copysign(1.0, x) < 0.0) return x == 0.0 ? 0.0 : NAN;
  const double a = fabs(x);
  if (a == INFINITY) {
    if (overflow == Overflow::saturate || (!t.has_inf && !t.has_nan))
      return copysign(t.max_finite, x);
    return t.has_inf ? x : NAN;
  }
  const double r = detail::apply_overflow(t, detail::round_magnitude(t, a), overflow);
  if (t.kind == FormatKind::integer && r == 0.0) return 0.0;
  return r != r ? r : copysign(r, x);
}

ATTNDEV_HD inline double round_to(Format f, double x) {
  return round_to(f, x, default_overflow(f));
}

// Float fast paths. Each equals static_cast<float>(round_to(f, double(x))) bit for bit for every
// non-NaN float; a NaN comes back as the same bits (the double path gives a NaN too, quieted or
// not depending on whether the compiler folds float -> double -> float). Overflow is to +-inf,
// the default for these formats.

// bf16 is the upper half of a float with the same exponent range, so RNE on the low 16 bits is
// the whole job: subnormals are linear in the bits, and a carry into the exponent field is the
// correct next binade (or inf at the top).
ATTNDEV_HD inline float round_to_bf16(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  const bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return float_from_bits(is_nan ? u : rounded);
}

// tf32: same idea with 13 dropped bits (fp32 exponent range, 10 fraction bits).
ATTNDEV_HD inline float round_to_tf32(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t rounded = (u + 0x0FFFu + ((u >> 13) & 1u)) & 0xFFFFE000u;
  const bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return float_from_bits(is_nan ? u : rounded);
}

// fp16: both candidate roundings are computed and selected. Below 2^-14 the quantum is fixed at
// 2^-24, and adding 0.5f (whose ulp is 2^-24) makes the float adder round there. Above, RNE on
// the low 13 bits of the float. Beyond 65504 (65520 and up round past it) the result is inf.
ATTNDEV_HD inline float round_to_fp16(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t sign = u & 0x80000000u;
  const std::uint32_t abs_bits = u & 0x7FFFFFFFu;
  const float a = float_from_bits(abs_bits);
  const float sub = (a + 0.5f) - 0.5f;
  const std::uint32_t normal = (abs_bits + 0x0FFFu + ((abs_bits >> 13) & 1u)) & 0xFFFFE000u;
  std::uint32_t r = a < 0x1p-14f ? bits_of(sub) : normal;
  r = r > 0x477FE000u ? 0x7F800000u : r;  // 0x477FE000 is 65504.0f
  const bool is_nan = abs_bits > 0x7F800000u;
  return float_from_bits(is_nan ? u : (r | sign));
}

// Float in, float out: float -> double is exact, so this is one rounding from the float value.
// (fp64 is returned unchanged: a float is already an fp64 value.)
ATTNDEV_HD inline float round_to(Format f, float x) {
  switch (f) {
    case Format::bf16:
      return round_to_bf16(x);
    case Format::fp16:
      return round_to_fp16(x);
    case Format::tf32:
      return round_to_tf32(x);
    default:
      return static_cast<float>(round_to(f, static_cast<double>(x), default_overflow(f)));
  }
}

// Is x exactly representable in f (finite, in range)?
ATTNDEV_HD inline bool representable(Format f, double x) {
  return x - x == 0.0 && round_to(f, x, Overflow::to_nan) == x;
}

}  // namespace attndev::numerics
