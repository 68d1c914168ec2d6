// Rounding a float to a format chosen at run time, without a branch (see FloatRounder).
#pragma once

#include <cstdint>

#include "format.hpp"
#include "policy.hpp"
#include "round.hpp"

namespace attndev::numerics {

// Rounding a float to any format up to fp32 (fp32, tf32, bf16, fp16, fp8-e4m3, fp8-e5m2) with
// the format as runtime data, without a branch: a loop over an array (or a per-element hook such
// as FA-1's O store) vectorizes whatever the policy, where a switch per element would not. The
// same bits as round_to(f, double(x), overflow) for every float (test_fast_path.cpp; checked
// exhaustively over all 2^32 floats for every format and overflow rule a policy uses):
//   normal range     RNE on the low `drop` bits of |x| (a carry is the next binade or inf's bits)
//   below f's min    (|x| + C) - C with ulp(C) = f's subnormal quantum: the float adder rounds at
//   normal           exactly that quantum (C = 2^(emin - fraction_bits + 23); exact subtraction)
//   beyond max       the overflow rule's value: inf, the largest finite value, or NaN
//   NaN              unchanged
struct FloatRounder {
  std::uint32_t half_minus_one = 0, lsb_shift = 0, lsb_and = 0, keep = 0xFFFFFFFFu;
  float min_normal = 0.0f, subnormal_c = 0.0f;
  std::uint32_t max_bits = 0x7F7FFFFFu, overflow_bits = 0x7F800000u, overflow_sign = 0x80000000u;
  std::uint32_t inf_bits = 0x7F800000u, inf_sign = 0x80000000u;  // what +-inf becomes

  FloatRounder() = default;
  FloatRounder(Format f, Overflow overflow) {
    const FormatTraits t = traits(f);
    const int drop = 23 - t.fraction_bits;
    if (drop > 0) {
      half_minus_one = (1u << (drop - 1)) - 1u;
      lsb_shift = static_cast<std::uint32_t>(drop);
      lsb_and = 1u;
      keep = ~((1u << drop) - 1u);
    }
    if (t.min_exponent > -126) {  // fp16, fp8: a subnormal range inside float's normal range
      min_normal = static_cast<float>(t.min_normal());
      subnormal_c = static_cast<float>(FormatTraits::pow2(t.min_exponent - t.fraction_bits + 23));
    }
    max_bits = bits_of(static_cast<float>(t.max_finite));
    if (overflow == Overflow::saturate) {
      overflow_bits = max_bits;
    } else if (overflow == Overflow::to_inf && t.has_inf) {
      overflow_bits = 0x7F800000u;
    } else {  // no inf in the format and no saturation: NaN, unsigned like round_to's NAN
      overflow_bits = 0x7FC00000u;
      overflow_sign = 0u;
    }
    // An infinite input is not an overflow: it stays infinite where the format has inf (even
    // under to_nan), saturates under saturate, and is NaN in a format without inf.
    if (overflow == Overflow::saturate) {
      inf_bits = max_bits;
    } else if (!t.has_inf) {
      inf_bits = 0x7FC00000u;
      inf_sign = 0u;
    }
  }
  // The rounder of a policy stage, with the overflow rule policy.round() applies.
  FloatRounder(const PrecisionPolicy& policy, Stage s)
      : FloatRounder(policy[s],
                     traits(policy[s]).has_inf ? Overflow::to_inf : policy.fp8_overflow) {}

  float operator()(float x) const {
    const std::uint32_t u = bits_of(x);
    const std::uint32_t abs_bits = u & 0x7FFFFFFFu;
    const float a = float_from_bits(abs_bits);
    const float sub = (a + subnormal_c) - subnormal_c;
    const std::uint32_t normal =
        (abs_bits + half_minus_one + ((abs_bits >> lsb_shift) & lsb_and)) & keep;
    const std::uint32_t sign = u & 0x80000000u;
    const std::uint32_t mag = a < min_normal ? bits_of(sub) : normal;
    std::uint32_t r = mag > max_bits ? overflow_bits | (sign & overflow_sign) : mag | sign;
    r = abs_bits == 0x7F800000u ? inf_bits | (sign & inf_sign) : r;
    const bool is_nan = abs_bits > 0x7F800000u;
    return float_from_bits(is_nan ? u : r);
  }
};

}  // namespace attndev::numerics
