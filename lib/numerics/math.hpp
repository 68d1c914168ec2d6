// Elementary functions used inside emulated arithmetic.
//
// The emulator and the CUDA kernels must compute exp/exp2 bit-identically, so neither may call
// the platform's libm (glibc and CUDA's libdevice differ in the last bit). These are our own
// implementations from + - * and explicit fma only (plus bit manipulation), compiled the same way
// on host and device. With -ffp-contract=off on the host and --fmad=false on the device the
// operation sequence is fixed, and IEEE + - * fma are correctly rounded on both.
//
// Shape of every kernel: clamp x (a NaN passes the selects unchanged), x = k*b + r with k an
// integer from a magic-number add (no float->int conversion, no call), f(r) = 1 + r*g(r) by
// Horner with fma, then the result is scaled by 2^k in two steps: 2^k alone is not representable
// for results in the subnormal range (or just past overflow), and p * 2^k1 is exact, so the
// second multiply is the only rounding the scaling adds. No branches: a plain loop over an array
// vectorizes. Coefficients come from test/numerics/gen_exp_coeffs.py; accuracy is measured in
// test_math.cpp and reported in docs/formats.md.
//
// exp_in(f, x) / exp2_in(f, x): the function evaluated in the working precision a kernel would use
// for a stage stored in f (fp32 arithmetic for every format up to fp32, fp64 for fp64), then
// rounded once to f.
#pragma once

#include <cmath>
#include <cstdint>

#include "format.hpp"
#include "host_device.hpp"
#include "round.hpp"

namespace attndev::numerics {

// log2(e) rounded to double: exp(x) = exp2(x * log2(e)) is how every kernel folds the softmax
// scale into one multiplier (the product is taken in double, then rounded once to the policy's
// stats format).
inline constexpr double kLog2e = 1.4426950408889634074;

namespace detail {

// Adding 1.5 * 2^23 (2^52 for double) to |x| < 2^22 rounds x to an integer (RNE), and that
// integer is the difference of the bit patterns.
inline constexpr float kRoundMagicF = 0x1.8p23f;
inline constexpr double kRoundMagicD = 0x1.8p52;

// p * 2^k for |k| <= 300 (float) or 2200 (double), as two exact power-of-two factors. k comes in
// as the unsigned difference of bit patterns; wrapping unsigned arithmetic equals the signed one
// for valid k and stays defined for the garbage k of a NaN. The bias keeps the halving a logical
// shift (AVX2 has no 64-bit arithmetic shift), so the loop still vectorizes.
ATTNDEV_HD inline float scale_pow2_f32(float p, std::uint32_t k) {
  const std::uint32_t k1 = ((k + 512u) >> 1) - 256u;  // floor(k / 2)
  const std::uint32_t k2 = k - k1;
  return (p * float_from_bits((k1 + 127u) << 23)) * float_from_bits((k2 + 127u) << 23);
}
ATTNDEV_HD inline double scale_pow2_f64(double p, std::uint64_t k) {
  const std::uint64_t k1 = ((k + 4096u) >> 1) - 2048u;
  const std::uint64_t k2 = k - k1;
  return (p * double_from_bits((k1 + 1023u) << 52)) * double_from_bits((k2 + 1023u) << 52);
}

}  // namespace detail

// 2^x in float. Beyond the clamps the result is already 0 (2^-160) or inf (2^140); -inf gives +0
// and +inf gives inf through the same clamps, and exp2(-1e30) (a masked score) gives 0.
ATTNDEV_HD inline float exp2_f32(float x) {
  x = x < -160.0f ? -160.0f : x;
  x = x > 140.0f ? 140.0f : x;
  const float shifted = x + detail::kRoundMagicF;
  const float k_f = shifted - detail::kRoundMagicF;
  // For a NaN x, k is garbage but finite bits; p is NaN and so is the product.
  const std::uint32_t k = bits_of(shifted) - bits_of(detail::kRoundMagicF);
  const float r = x - k_f;  // exact, |r| <= 1/2
  float g = 0x1.44138ap-13f;
  g = fmaf(g, r, 0x1.5f089p-10f);
  g = fmaf(g, r, 0x1.3b2a54p-7f);
  g = fmaf(g, r, 0x1.c6af6cp-5f);
  g = fmaf(g, r, 0x1.ebfbep-3f);
  g = fmaf(g, r, 0x1.62e43p-1f);
  return detail::scale_pow2_f32(fmaf(r, g, 1.0f), k);
}

// e^x in float with Cody-Waite reduction: r = x - k*ln2 with ln2 split as hi + lo. k*ln2_hi
// needs no rounding inside the fma and x - k*ln2_hi is exact (Sterbenz-like: |r| < 1/2 on the
// grid of ulp(x) and ulp(ln2_hi)), so r carries only one rounding. exp2(x*log2e) instead would
// round x*log2e, an error of up to |x| * 2^-24 in the exponent, ~60 ulp at x = 88.
ATTNDEV_HD inline float exp_f32(float x) {
  x = x < -110.0f ? -110.0f : x;  // e^-110 < 2^-150: rounds to 0
  x = x > 100.0f ? 100.0f : x;    // e^100 > FLT_MAX
  const float shifted = fmaf(x, 0x1.715476p+0f, detail::kRoundMagicF);
  const float k_f = shifted - detail::kRoundMagicF;
  const std::uint32_t k = bits_of(shifted) - bits_of(detail::kRoundMagicF);
  float r = fmaf(-k_f, 0x1.62e43p-1f, x);
  r = fmaf(-k_f, -0x1.05c61p-29f, r);  // |r| <= ln2/2 plus k's rounding slack
  float g = 0x1.6d44b2p-10f;
  g = fmaf(g, r, 0x1.123f1ep-7f);
  g = fmaf(g, r, 0x1.5554e8p-5f);
  g = fmaf(g, r, 0x1.55547ap-3f);
  g = fmaf(g, r, 0x1p-1f);
  g = fmaf(g, r, 0x1p+0f);
  return detail::scale_pow2_f32(fmaf(r, g, 1.0f), k);
}

// 2^x in double.
ATTNDEV_HD inline double exp2_f64(double x) {
  x = x < -1100.0 ? -1100.0 : x;
  x = x > 1100.0 ? 1100.0 : x;
  const double shifted = x + detail::kRoundMagicD;
  const double k_f = shifted - detail::kRoundMagicD;
  const std::uint64_t k = bits_of(shifted) - bits_of(detail::kRoundMagicD);
  const double r = x - k_f;  // exact
  double g = 0x1.e9d3fe3952179p-32;
  g = fma(g, r, 0x1.e6063f7217bc6p-28);
  g = fma(g, r, 0x1.b524fae627834p-24);
  g = fma(g, r, 0x1.62bfd47773353p-20);
  g = fma(g, r, 0x1.ffcbfc670dcd4p-17);
  g = fma(g, r, 0x1.430913096fd9fp-13);
  g = fma(g, r, 0x1.5d87fe78a5276p-10);
  g = fma(g, r, 0x1.3b2ab6fba1ddap-7);
  g = fma(g, r, 0x1.c6b08d704a0c2p-5);
  g = fma(g, r, 0x1.ebfbdff82c598p-3);
  g = fma(g, r, 0x1.62e42fefa39efp-1);
  return detail::scale_pow2_f64(fma(r, g, 1.0), k);
}

// e^x in double, Cody-Waite as in exp_f32.
ATTNDEV_HD inline double exp_f64(double x) {
  x = x < -760.0 ? -760.0 : x;  // e^-760 < 2^-1075: rounds to 0
  x = x > 720.0 ? 720.0 : x;    // e^720 > DBL_MAX
  const double shifted = fma(x, 0x1.71547652b82fep+0, detail::kRoundMagicD);
  const double k_f = shifted - detail::kRoundMagicD;
  const std::uint64_t k = bits_of(shifted) - bits_of(detail::kRoundMagicD);
  double r = fma(-k_f, 0x1.62e42fefa39efp-1, x);
  r = fma(-k_f, 0x1.abc9e3b39803fp-56, r);
  double g = 0x1.af4f1ddf981a8p-26;
  g = fma(g, r, 0x1.28a3c505b0b3cp-22);
  g = fma(g, r, 0x1.71de019d031e7p-19);
  g = fma(g, r, 0x1.a019a56f9afc6p-16);
  g = fma(g, r, 0x1.a01a01ac16f76p-13);
  g = fma(g, r, 0x1.6c16c17f92f34p-10);
  g = fma(g, r, 0x1.1111111110085p-7);
  g = fma(g, r, 0x1.5555555551f8cp-5);
  g = fma(g, r, 0x1.5555555555557p-3);
  g = fma(g, r, 0x1.0000000000005p-1);
  g = fma(g, r, 0x1p+0);
  return detail::scale_pow2_f64(fma(r, g, 1.0), k);
}

// e^x as PyTorch's Vectorized<float>::exp_u20 computes it in each lane on AVX2 and AVX-512
// (aten/src/ATen/cpu/vec/vec256/vec256_float.h; its CPU flash-attention kernel's softmax), one
// float operation per vector instruction, so that the result has its bits (not e^x's: the
// polynomial's error is up to ~20 ulp, hence the name). The sequence:
//   below = x < ln(FLT_MIN)                        (0xc2aeac50, about -87.34; false for NaN)
//   src   = max(min(x, ln(FLT_MAX)), ln(FLT_MIN))  (MINPS/MAXPS: the second operand if NaN)
//   fx    = floor(fma(src, log2(e), 0.5))          (log2(e) = 0x3fb8aa3b)
//   r     = fma(-fx, ln2, src)                     (ln2 = 0x3f317218: one rounding, no hi/lo)
//   poly  = 1 + r(c1 + r(c2 + r(c3 + r(c4 + r c5))))  by Horner with fma, c_k near 1/k!
//   2^(fx-1) built from bits ((int(fx - 1) + 127) << 23), +0 where below
//   result = (poly * 2^(fx-1)) * 2
// Host and device: only float + - * fma, a floor and bit operations.
ATTNDEV_HD inline float exp_u20_f32(float x) {
  const float ln_flt_min = float_from_bits(0xc2aeac50u);
  const float ln_flt_max = float_from_bits(0x42b17218u);
  const bool below = x < ln_flt_min;
  float src = x < ln_flt_max ? x : ln_flt_max;  // MINPS(x, max)
  src = src > ln_flt_min ? src : ln_flt_min;    // MAXPS(src, min)
  const float fx = floorf(fmaf(src, float_from_bits(0x3fb8aa3bu), 0.5f));
  const float r = fmaf(-fx, float_from_bits(0x3f317218u), src);
  float poly = fmaf(r, 0.00828929059f, 0.0418978221f);
  poly = fmaf(r, poly, 0.166676521f);
  poly = fmaf(r, poly, 0.499991506f);
  poly = fmaf(r, poly, 0.999999701f);
  poly = fmaf(r, poly, 1.0f);
  // fx - 1 is an integer in [-127, 127]: the conversion is exact. Unsigned arithmetic wraps as
  // the vector's 32-bit integer lanes do (fx - 1 = -127 gives the bits of +0).
  const std::uint32_t e = static_cast<std::uint32_t>(static_cast<std::int32_t>(fx - 1.0f)) + 127u;
  const float two_pow = below ? 0.0f : float_from_bits(e << 23);
  return (poly * two_pow) * 2.0f;
}

// e^x as PyTorch's Vectorized<float>::fexp_u20 computes it on AVX2 (vec256_float.h; the "fast"
// exp its CPU flash kernel uses where P is stored in bf16 or fp16): a Schraudolph-style exponent
// trick with a cubic correction (Malossi et al., "Fast Exponential Computation on SIMD
// Architectures"), accurate to about 1 ulp of bf16/fp16 only:
//   y    = x * log2(e)                             (one rounding)
//   f    = y - floor(y)
//   corr = c0 + f(c1 + f(c2 + f c3))               (Horner with fma)
//   bits = trunc(fma(2^23, y - corr, 127 * 2^23))  (the float's bit pattern, taken as an integer)
//   +0 for x < ln(FLT_MIN), +inf for x > ln(FLT_MAX)
// Host and device: float * - fma, floor, trunc and bit operations.
ATTNDEV_HD inline float fexp_u20_f32(float x) {
  const float ln_flt_min = float_from_bits(0xc2aeac50u);
  const float ln_flt_max = float_from_bits(0x42b17218u);
  if (x < ln_flt_min) return 0.0f;  // also -inf: a masked score
  if (x > ln_flt_max) return static_cast<float>(INFINITY);
  float y = x * float_from_bits(0x3fb8aa3bu);
  const float f = y - floorf(y);
  // The coefficients as the kernel writes them: float literals, or double literals converted.
  float corr =
      fmaf(f, static_cast<float>(-0.079204240219773236), static_cast<float>(-0.22433836478672356));
  corr = fmaf(f, corr, 0.30354260500649682f);
  corr = fmaf(f, corr, 0.00010703434948458272f);
  y = y - corr;
  const float t = fmaf(8388608.0f, y, 1065353216.0f);  // 2^23 * y + 127 * 2^23
  // In range, t is in (0, 2^31): the truncating conversion (CVTTPS2DQ) is defined. A NaN x
  // passes both tests; the vector instruction gives 0x80000000 (-0.0f) for it.
  if (!(t == t)) return float_from_bits(0x80000000u);
  return float_from_bits(static_cast<std::uint32_t>(static_cast<std::int32_t>(t)));
}

// e^x as a libm expf computes it (glibc's evaluates in double and rounds once; PyTorch's CPU
// flash kernel calls std::exp(float) for its scalar tails and rescale factors): exp_f64 rounded
// to float. Correctly rounded but where e^x lies within exp_f64's error of a midpoint between
// floats (about one argument in 2^29), as glibc's is.
ATTNDEV_HD inline float libm_expf(float x) {
  return static_cast<float>(exp_f64(static_cast<double>(x)));
}

ATTNDEV_HD inline double exp2_in(Format f, double x) {
  if (f == Format::fp64) return exp2_f64(x);
  return round_to(f, static_cast<double>(exp2_f32(static_cast<float>(x))));
}
ATTNDEV_HD inline double exp_in(Format f, double x) {
  if (f == Format::fp64) return exp_f64(x);
  return round_to(f, static_cast<double>(exp_f32(static_cast<float>(x))));
}

}  // namespace attndev::numerics
