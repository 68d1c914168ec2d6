// Arithmetic in a format known at compile time, without branches: the exact-then-rounded
// operations of arith.hpp (add_in, mul_in, div_in, fma_in) and round_to, rewritten so that a
// plain loop over an array vectorizes (selects instead of branches, no frexp/ldexp, no calls).
// The SIMD fast path uses them for policy stages whose arithmetic is narrower than fp32 (e.g. the
// bf16 statistics of working-bf16): computing a bf16 operation as one float operation and
// rounding afterwards is a double rounding, which can differ from a single rounding of the exact
// result (an fma's exact result needs up to 48 + 24 bits; a sum of far-apart operands, more).
//
// Each function runs *the same double operation sequence* as its arith.hpp counterpart (TwoSum,
// TwoProd, the FMA's three TwoSums) and rounds the exact hi + lo with the same tie rule, so its
// result is the same bits for every input, signed zeros and NaN/inf included; test_static_arith
// checks that on random operands of every width and on ties, zeros and non-finite values.
//
// Operands come in as doubles; on the fast path they are floats (exact in double), the result is
// a value of F (exact in float). F is one of tf32, fp16, bf16 (formats with inf; their overflow is
// to inf, default_overflow(F)). fp32 needs none of this (a float operation is the exact result
// rounded once) and fp64 is double itself.
#pragma once

#include <cmath>
#include <cstdint>

#include "arith.hpp"
#include "format.hpp"
#include "round.hpp"

namespace attndev::numerics::fixed {

template <Format F>
inline constexpr bool kSupported = F == Format::tf32 || F == Format::fp16 || F == Format::bf16;

// round_magnitude(traits(F), a) for finite a >= 0, without a branch: both candidates are
// computed and one is selected.
template <Format F>
inline double round_magnitude(double a) {
  static_assert(kSupported<F>);
  constexpr FormatTraits t = traits(F);
  const double c = detail::pow2_normal(t.min_exponent - t.fraction_bits + 52);
  const double sub = (a + c) - c;
  constexpr int kDrop = 52 - t.fraction_bits;
  std::uint64_t u = bits_of(a);
  u += (std::uint64_t{1} << (kDrop - 1)) - 1u + ((u >> kDrop) & 1u);
  u &= ~((std::uint64_t{1} << kDrop) - 1u);
  return a < detail::pow2_normal(t.min_exponent) ? sub : double_from_bits(u);
}

// round_to(F, x): RNE, overflow to inf, NaN kept, sign kept.
template <Format F>
inline double round_to(double x) {
  constexpr FormatTraits t = traits(F);
  const double a = std::fabs(x);
  double r = round_magnitude<F>(a);  // inf stays inf (its bits are unchanged by the rounding)
  r = r > t.max_finite ? INFINITY : r;
  r = std::copysign(r, x);
  return x != x ? x : r;
}

// round_to(F, hi, lo) of arith.hpp: the exact value hi + lo (hi = RN_double(hi + lo)) rounded
// once to F. Only the sign of lo matters, and only when hi is exactly a midpoint of F.
template <Format F>
inline double round_to(double hi, double lo) {
  constexpr FormatTraits t = traits(F);
  const double a = std::fabs(hi);
  double r = round_magnitude<F>(a);
  // a = m 2^e with e = floor(log2 a) from the exponent bits (a is a normal double here: the
  // smallest nonzero input, a product of two fp32 subnormals, is 2^-298), clamped to F's
  // smallest normal exponent; half a quantum of F at a is 2^(e - fraction_bits - 1).
  int e = static_cast<int>(bits_of(a) >> 52) - 1023;
  e = e < t.min_exponent ? t.min_exponent : e;
  const double half_quantum = detail::pow2_normal(e - t.fraction_bits - 1);
  const double err = a - r;
  // Bitwise & and | on bools, not && / ||: short-circuits are branches, and a branch stops the
  // loop that calls this from vectorizing.
  const bool same_side = (lo > 0) == (hi > 0);
  const bool lo_points_away_from_r = (same_side & (err > 0)) | (!same_side & (err < 0));
  const bool tie_to_undo = (r != a) & (std::fabs(err) == half_quantum) & lo_points_away_from_r;
  r = tie_to_undo ? r + 2.0 * err : r;
  r = r > t.max_finite ? INFINITY : r;
  r = std::copysign(r, hi);
  // lo == 0, or hi non-finite: the plain rounding of hi (arith.hpp's first branch).
  const bool plain = (lo == 0.0) | !(a <= 1.7976931348623157e308);
  return plain ? round_to<F>(hi) : r;
}

template <Format F>
inline double add_in(double a, double b) {
  double s, e;
  two_sum(a, b, s, e);
  return round_to<F>(s, e);
}

template <Format F>
inline double sub_in(double a, double b) {
  return add_in<F>(a, -b);
}

template <Format F>
inline double mul_in(double a, double b) {
  double p, e;
  two_prod(a, b, p, e);
  return round_to<F>(p, e);
}

template <Format F>
inline double div_in(double a, double b) {
  const double q = a / b;
  const double remainder = std::fma(-q, b, a);
  const double sticky = (b > 0) == (remainder > 0) ? 1e-300 : -1e-300;
  const double r = round_to<F>(q, remainder == 0.0 ? 0.0 : sticky);
  // A non-finite or zero quotient is rounded as it is (its remainder is meaningless).
  return (!(std::fabs(q) <= 1.7976931348623157e308) | (q == 0.0)) ? round_to<F>(q) : r;
}

template <Format F>
inline double fma_in(double a, double b, double c) {
  const double fused = std::fma(a, b, c);
  double ph, pl;
  two_prod(a, b, ph, pl);
  double s, t, u, v, hi, w;
  two_sum(ph, c, s, t);
  two_sum(t, pl, u, v);
  two_sum(s, u, hi, w);
  const double r = round_to<F>(hi, w + v);
  const bool plain =
      !(std::fabs(fused) <= 1.7976931348623157e308) || !(std::fabs(ph) <= 1.7976931348623157e308);
  return plain ? round_to<F>(fused) : r;
}

}  // namespace attndev::numerics::fixed
