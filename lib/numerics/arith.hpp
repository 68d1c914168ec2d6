// Arithmetic "in a format": the exact result of one operation, rounded once to the format.
//
// For formats of precision p <= 25 bits whose operands are already in the format, computing in
// double and rounding is exact single rounding (53 >= 2p + 2: double rounding is innocuous for
// + - * / and sqrt). To stay correct when an operand is wider than the target (a custom policy
// that accumulates fp64 inputs in fp32, say), the error of the double operation is carried as a
// "sticky" term and decides exact ties. fp64 and fp32 use the native operations.
#pragma once

#include <cmath>

#include "format.hpp"
#include "host_device.hpp"
#include "round.hpp"

namespace attndev::numerics {

// Knuth's TwoSum: s + e == a + b exactly (no overflow assumed).
ATTNDEV_HD inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

// hi + lo == a * b exactly (barring underflow), via one FMA.
ATTNDEV_HD inline void two_prod(double a, double b, double& hi, double& lo) {
  hi = a * b;
  lo = fma(a, b, -hi);
}

// Rounds the exact value hi + lo to f, where hi = RN_double(hi + lo) (|lo| <= ulp(hi)/2, as
// TwoSum/TwoProd give; only the sign of lo is used). round(hi) differs from round(hi + lo) only
// when hi is exactly a midpoint of f: every midpoint of f is a double, so a midpoint strictly
// between hi and hi + lo would be nearer to hi + lo than hi is. The midpoint above the largest
// finite value counts too: 65520 - 2^-30 must give 65504 in fp16, not inf.
ATTNDEV_HD_OUTLINE double round_to(Format f, double hi, double lo) {
  if (f == Format::fp64 || lo == 0.0 || !(fabs(hi) <= 1.7976931348623157e308)) {
    return round_to(f, hi);
  }
  const FormatTraits t = traits(f);
  const double a = fabs(hi);
  double r = detail::round_magnitude(t, a);  // not yet clamped to the format's range
  if (r != a) {
    int exp2_of_a;
    frexp(a, &exp2_of_a);  // a = m * 2^exp2_of_a, m in [0.5, 1)
    int e = exp2_of_a - 1;
    if (e < t.min_exponent) e = t.min_exponent;
    const double half_quantum = ldexp(1.0, e - t.fraction_bits - 1);
    const double err = a - r;  // exact: r is a neighbour of a in the same or adjacent binade
    // a is a tie that RNE resolved towards r; lo tells on which side the exact value lies.
    const bool lo_points_away_from_r = (lo > 0) == (hi > 0) ? err > 0 : err < 0;
    if (fabs(err) == half_quantum && lo_points_away_from_r) r += 2.0 * err;
  }
  r = detail::apply_overflow(t, r, default_overflow(f));
  return r != r ? r : copysign(r, hi);
}

ATTNDEV_HD inline double add_in(Format f, double a, double b) {
  if (f == Format::fp64) return a + b;
  double s, e;
  two_sum(a, b, s, e);
  return round_to(f, s, e);
}

ATTNDEV_HD inline double sub_in(Format f, double a, double b) {
  return add_in(f, a, -b);
}

ATTNDEV_HD inline double mul_in(Format f, double a, double b) {
  if (f == Format::fp64) return a * b;
  double p, e;
  two_prod(a, b, p, e);
  return round_to(f, p, e);
}

ATTNDEV_HD inline double div_in(Format f, double a, double b) {
  if (f == Format::fp64) return a / b;
  const double q = a / b;
  if (!(fabs(q) <= 1.7976931348623157e308) || q == 0.0) return round_to(f, q);
  const double remainder = fma(-q, b, a);  // exact: a - q*b
  // a/b - q has the sign of remainder/b; its size is below half an ulp of q.
  const double sticky = (b > 0) == (remainder > 0) ? 1e-300 : -1e-300;
  return round_to(f, q, remainder == 0.0 ? 0.0 : sticky);
}

// Fused multiply-add a*b + c with a single rounding to f.
ATTNDEV_HD inline double fma_in(Format f, double a, double b, double c) {
  if (f == Format::fp64) return fma(a, b, c);
  if (f == Format::fp32) {
    const float fa = static_cast<float>(a), fb = static_cast<float>(b), fc = static_cast<float>(c);
    if (fa == a && fb == b && fc == c) return fmaf(fa, fb, fc);  // native, correctly rounded
  }
  // Exact a*b = ph + pl; exact ph + c = s + t; so a*b + c = s + t + pl exactly. t + pl is
  // summed error-free as well (u + v), then s + u = hi + w: the exact result is hi + (w + v), and
  // w + v, rounded, keeps its sign (zero only when it is zero), which is all round_to needs.
  // Rounding t + pl directly would not do: it can land exactly on ulp(s) and turn a value just
  // above a midpoint of f into the midpoint itself.
  const double fused = fma(a, b, c);
  double ph, pl;
  two_prod(a, b, ph, pl);
  if (!(fabs(fused) <= 1.7976931348623157e308) || !(fabs(ph) <= 1.7976931348623157e308)) {
    // Non-finite result, or a product beyond the double range that c brings back (a corner where
    // the double FMA's rounding is kept: it matters only at exact ties of f).
    return round_to(f, fused);
  }
  double s, t, u, v, hi, w;
  two_sum(ph, c, s, t);
  two_sum(t, pl, u, v);
  two_sum(s, u, hi, w);
  return round_to(f, hi, w + v);
}

// One step of a dot-product accumulation in format f, with or without a fused multiply-add:
// acc + a*b as fma (one rounding) or as mul then add (two roundings), the policy's choice.
ATTNDEV_HD inline double mac_in(Format f, bool fused, double acc, double a, double b) {
  return fused ? fma_in(f, a, b, acc) : add_in(f, acc, mul_in(f, a, b));
}

}  // namespace attndev::numerics
