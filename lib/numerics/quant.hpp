// Scalar rules of quantization: how an element is rounded to a narrow format, and how a block
// scale is chosen, as the published recipes compute them. The tensor-level quantizer
// (attention/quantize.hpp) and the recipes (attention/quant_recipes.hpp) are built from these.
//
// Element rounding (ElemRounding), always saturating at the format's largest value:
//   nearest_even   RNE: cvt.rn.satfinite (fp8, fp4), cvt.rni.sat.s8.f32 (int8); OCP MX's "even"
//   nearest_away   ties away from zero: microsoft/microxcaling's default round="nearest"
//                  (mx/elemwise_ops.py: sign(x) * floor(|x| + 0.5) on the element grid)
//   half_add_trunc Triton's int8 cast in SageAttention (sageattention/triton/quant_per_block.py
//                  and quant_per_thread.py): x += 0.5 * sign(x) in fp32, then truncation toward
//                  zero. The fp32 addition rounds, so x = 0.5 - 2^-25 becomes 1 (exact ties-away
//                  would give 0): a difference this rule keeps.
//
// Scale rules of the MX formats (OCP Microscaling Formats v1.0, Sec. 6.3; NVIDIA's in cuBLAS'
// "1D block quantization" and torchao's ScaleCalculationMode.RCEIL):
//   ocp_exponent(amax, emax)    floor(log2 amax) - emax, the exponent of the e8m0 scale; emax is
//                               the element format's largest exponent (e4m3 8, e5m2 15, e3m2 4,
//                               e2m3 2, e2m1 2). amax = 0 gives -127 (microxcaling guards
//                               log2(0) with fp32's smallest normal; -126 - emax clamps to -127).
//                               floor(log2) is read from amax's exponent, exactly: microxcaling
//                               takes torch.log2 in fp32, which rounds up to the next integer for
//                               amax just below a power of two >= 4 (|log2| error 2^-23/ln 2
//                               against an fp32 spacing of up to 2^-21), giving a scale twice as
//                               large there; the OCP rule is the exact floor.
//   rceil_exponent(d)           ceil(log2 d) for d = R_fp32(amax / max_elem): the e8m0 value
//                               rounded up (cvt.rp.satfinite.ue8m0x2.f32 on sm_100); d = 0 gives
//                               -127 (satfinite: the smallest e8m0 value).
// Both clamp to e8m0's range [-127, 127]; above it the scale is NaN (e8m0's 0xFF), which
// `exponent_overflows` reports.
#pragma once

#include <cmath>
#include <cstdint>

#include "format.hpp"
#include "host_device.hpp"
#include "round.hpp"

namespace attndev::numerics::quant {

enum class ElemRounding : std::uint8_t { nearest_even, nearest_away, half_add_trunc };

inline constexpr const char* elem_rounding_name(ElemRounding r) {
  switch (r) {
    case ElemRounding::nearest_even:
      return "nearest-even";
    case ElemRounding::nearest_away:
      return "nearest-away";
    case ElemRounding::half_add_trunc:
      return "half-add-trunc";
  }
  return "?";
}

// e8m0's exponent range: 2^-127 .. 2^127.
inline constexpr int kE8m0MinExp = -127;
inline constexpr int kE8m0MaxExp = 127;

// The largest exponent of an element format (OCP MX v1.0's emax_elem): floor(log2(max finite)).
// Integers: 0 (OCP's MXINT8 is a fixed-point format with emax 0; the recipes here scale int8 by
// amax / 127 instead and never ask).
ATTNDEV_HD constexpr int emax_elem(Format f) {
  return traits(f).kind == FormatKind::integer ? 0 : traits(f).max_exponent;
}

namespace detail {

ATTNDEV_HD inline double pow2(int e) {  // -1022 <= e <= 1023
  return ::attndev::numerics::detail::pow2_normal(e);
}

ATTNDEV_HD inline int floor_log2(double a) {  // a > 0, finite
  int e = static_cast<int>((bits_of(a) >> 52) & 0x7FFu) - 1023;
  if (e == -1023) {  // double subnormal: not reached by fp32 amax values, exact anyway
    int k = 0;
    while (a < 1.0) {
      a *= 2.0;
      --k;
    }
    return k;
  }
  return e;
}

// x rounded to the nearest value of f with ties away from zero, no exponent limit (the caller
// saturates). Same grid as round.hpp's round_magnitude: 2^(max(floor(log2 a), emin) - frac).
ATTNDEV_HD inline double round_away_magnitude(const FormatTraits& t, double a) {
  if (a == 0.0) return 0.0;
  int e = floor_log2(a);
  if (e < t.min_exponent) e = t.min_exponent;
  const double quantum = pow2(e - t.fraction_bits);
  return floor(a / quantum + 0.5) * quantum;  // a / quantum exact (power of two); + 0.5 exact
}

}  // namespace detail

// Whether an ocp/rceil exponent is beyond e8m0 (the scale is then NaN).
ATTNDEV_HD constexpr bool exponent_overflows(int e) {
  return e > kE8m0MaxExp;
}

ATTNDEV_HD inline int ocp_exponent(double amax, int emax) {
  if (!(amax > 0.0)) return kE8m0MinExp;
  const int e = detail::floor_log2(amax) - emax;
  return e < kE8m0MinExp ? kE8m0MinExp : e;
}

ATTNDEV_HD inline int rceil_exponent(double d) {
  if (!(d > 0.0)) return kE8m0MinExp;
  int e = detail::floor_log2(d);
  if (d != detail::pow2(e)) ++e;  // not a power of two: round up
  return e < kE8m0MinExp ? kE8m0MinExp : e;
}

// x (already divided by its scale) as element format f stores it under rounding r, saturating at
// +-max finite. NaN stays NaN (the caller counts it); int results are never -0.
ATTNDEV_HD inline double round_element(Format f, double x, ElemRounding r) {
  const FormatTraits t = traits(f);
  if (x != x) return x;
  switch (r) {
    case ElemRounding::nearest_even:
      return round_to(f, x, Overflow::saturate);
    case ElemRounding::nearest_away: {
      const double a = fabs(x);
      double m = a == INFINITY ? t.max_finite : detail::round_away_magnitude(t, a);
      if (m > t.max_finite) m = t.max_finite;
      if (m == 0.0 && t.kind == FormatKind::integer) return 0.0;
      return copysign(m, x);
    }
    case ElemRounding::half_add_trunc: {
      // Triton: (x + 0.5 * sign) in fp32, then fptosi (truncation); the integer formats only.
      const float xf = static_cast<float>(x);
      const float y = xf + (xf >= 0.0f ? 0.5f : -0.5f);
      double m = trunc(static_cast<double>(y));
      if (m > t.max_finite) m = t.max_finite;
      if (m < -t.max_finite) m = -t.max_finite;
      return m == 0.0 ? 0.0 : m;
    }
  }
  return x;
}

// Whether round_element clamps x: its nearest grid value (the format's grid continued past the
// top binade) lies beyond the largest finite value. The count every quantized stage reports; an
// element that merely rounds down onto the largest value (an fp32 scale a hair below amax / max)
// is not saturated.
ATTNDEV_HD inline bool saturates(Format f, double x) {
  const FormatTraits t = traits(f);
  const double a = fabs(x);
  if (a != a || a <= t.max_finite) return false;
  if (a == INFINITY) return true;
  return ::attndev::numerics::detail::round_magnitude(t, a) > t.max_finite;
}

}  // namespace attndev::numerics::quant
