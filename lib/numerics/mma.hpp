// The tensor cores' arithmetic: the fused dot-add of NVIDIA's matrix units, bit for bit, and its
// chaining over k. The profiles (block width, F, D's rounding per architecture) and their
// sources are in mma_profiles.hpp; docs/numerics.md, "Tensor cores", explains the rule.
//
// One fused dot-add, D = c + sum_{i<n} a_i b_i, n <= the profile's block (both published
// bit-accurate models, Khattak & Mikaitis' GlobalAlignmentSum and MMA-Sim's nv_fused_dot_add):
//   1. each operand is x = s 2^e, 1 <= |s| < 2, with e clamped at its format's emin (a subnormal
//      keeps e = emin and |s| < 1); a product's exponent is e_a + e_b (its significand s_a s_b,
//      in [1, 4), is NOT renormalised); c is decomposed as an fp32 value;
//   2. E = the largest exponent over the nonzero products and a nonzero c: C is aligned together
//      with the products, neither added first nor last;
//   3. every term is truncated toward zero (sign-magnitude: no guard, round or sticky bit) to F
//      fraction bits below 2^E, t_i = trunc(term_i 2^(F - E)), and the t_i are summed exactly;
//   4. the sum is normalised once and rounded: toward zero to fp32 (subnormals kept, down to
//      2^-149), or toward zero to 13 fraction bits (e8m13: Hopper and Ada fp8), or to nearest
//      even for an fp16 D.
// Special values: a NaN operand, inf * 0 or inf - inf give the canonical NaN (0x7FFFFFFF as fp32,
// 0x7FFF as fp16); an inf product or c otherwise gives that inf.
//
// Where the two published models differ, this one follows Khattak & Mikaitis (their
// models/<GPU>TC.m and tools/Generic_BFMA_TC.m), and test_mma_signatures.cpp pins each choice:
//   * zero terms: dropped (zero products and a zero c take no part in E), and E is at least the
//     profile's kMinExp (-132 on sm_80/89, -133 on sm_90/100; -20 / -21 for an fp16 D of fp16
//     inputs). MMA-Sim instead gives a zero operand exponent -126, which can raise E; the two
//     agree wherever the result and every product are above about 2^-126 * 2^-F.
//   * a nonzero sum that truncates to zero keeps its sign (-0 for a negative one); an exact zero
//     sum is +0 in both.
//   * overflow (|D| >= 2^128 after truncation) is inf in both models (MMA-Sim rebuilds D through
//     a float conversion; Khattak's model maps the all-ones exponent to inf), not the largest
//     finite value that round-toward-zero would give in IEEE arithmetic.
//
// Why doubles: every input format's significand has at most 11 bits (tf32, after truncation),
// so a product is exact in double, and multiplying it by 2^(F - E) is exact (or so far below 1
// that it truncates to 0 whatever its rounding). Each t_i is then an integer below 2^(F + 2) and
// their sum below 2^43: exact in double in any order. So the model is a few exact double
// operations per product, the same on the host and on the device, and vectorises.
//
// Chaining (dot): an instruction of k > block runs k / block dot-adds; a GEMM's k-loop runs
// instructions in increasing k; in both, each D (rounded as above) is the next one's C. So a dot
// product of length K is the chain of fused dot-adds over consecutive blocks of `block` products
// starting at its first element, which is what dot() computes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "format.hpp"
#include "host_device.hpp"
#include "mma_profiles.hpp"
#include "round.hpp"

namespace attndev::numerics::mma {

// The formats of A and B as the dot-add reads them.
struct Operands {
  Format a = Format::bf16, b = Format::bf16;
  int emin_a = -126, emin_b = -126;  // exponent of each format's smallest normal
  // Added to every product's exponent: block-scaled kinds, the sum of the two ue8m0 scales'
  // exponents of the block (0 otherwise).
  int scale_exp = 0;
};

ATTNDEV_HD constexpr Operands operands(Format a, Format b, int scale_exp = 0) {
  // fp32 registers read as tf32 have fp32's (= tf32's) exponent range.
  return {a, b, traits(a).min_exponent, traits(b).min_exponent, scale_exp};
}

namespace detail {

// Unbiased exponent of a nonzero double; every value of an input format and of fp32 is a normal
// double. inf and NaN give 1024 (the caller keeps them out of the scaling).
ATTNDEV_HD inline int exponent_of(double x) {
  return static_cast<int>((bits_of(x) >> 52) & 0x7FFu) - 1023;
}
ATTNDEV_HD inline int term_exponent(double x, int emin) {
  const int e = exponent_of(x);
  return e < emin ? emin : e;
}

// 2^e for any e (clamped into the normal double range: the callers only need that far).
ATTNDEV_HD inline double pow2(int e) {
  e = e < -1022 ? -1022 : (e > 1023 ? 1023 : e);
  return double_from_bits(static_cast<std::uint64_t>(e + 1023) << 52);
}

// The fp32 value x read as tf32: its 13 low fraction bits dropped (truncation toward zero of
// the magnitude; what the hardware does with an fp32 register operand). NaN and inf stay.
ATTNDEV_HD inline double truncate_to_tf32(double x) {
  return static_cast<double>(float_from_bits(bits_of(static_cast<float>(x)) & 0xFFFFE000u));
}

ATTNDEV_HD inline double canonical_nan(Output out) {
  // fp16's 0x7FFF widened to fp32 is 0x7FFFE000.
  return static_cast<double>(float_from_bits(out == Output::fp16 ? 0x7FFFE000u : 0x7FFFFFFFu));
}

}  // namespace detail

// The value v (exact: a sum of terms on the grid 2^(E - F)) rounded as D is stored: toward zero
// to fp32 with 23 (e8m13: 13) fraction bits, subnormals kept; to nearest even for fp16. Beyond
// the largest finite binade: inf. A nonzero v that truncates to zero keeps its sign.
ATTNDEV_HD inline double round_d(double v, bool e8m13, Output out) {
  if (out == Output::fp16) return round_to(Format::fp16, v);
  const int keep = e8m13 ? 13 : 23;
  const double a = fabs(v);
  if (!(a < 0x1p128)) return copysign(static_cast<double>(INFINITY), v);
  double r;
  if (a < 0x1p-126) {
    // The subnormal range's quantum is fixed; a / q and trunc(..) * q are exact.
    const double q = detail::pow2(-126 - keep);
    r = trunc(a / q) * q;
  } else {
    r = double_from_bits(bits_of(a) & ~((std::uint64_t{1} << (52 - keep)) - 1u));
  }
  return copysign(r, v);
}

// Rounds an accumulator value (an fp32 C, say) as the profile stores D: what a dot-add of no
// products returns (SageAttention2's probe: A = B = 0 gives C with its low 10 bits cleared on
// Hopper fp8). A zero stays as it is.
template <class P>
ATTNDEV_HD double round_accumulator(double c, Output out = Output::fp32) {
  return c == 0 ? c : round_d(c, P::kE8m13, out);
}

// One fused dot-add of profile P: c + sum_{i<n} a[i sa] b[i sb], n <= P::kBlock, rounded as D.
// a and b hold values of op.a and op.b (tf32 kinds: fp32 values, truncated here); c a value of
// the output type.
template <class P>
ATTNDEV_HD double fused_dot_add(const Operands& op, const double* a, std::ptrdiff_t sa,
                                const double* b, std::ptrdiff_t sb, int n, double c,
                                Output out = Output::fp32) {
  constexpr bool kTf32 = P::kKind == Kind::tf32;
  int e_max = out == Output::fp16 ? P::kMinExpFp16 : P::kMinExp;
  for (int i = 0; i < n; ++i) {
    double x = a[i * sa], y = b[i * sb];
    if constexpr (kTf32) {
      x = detail::truncate_to_tf32(x);
      y = detail::truncate_to_tf32(y);
    }
    if (x != 0 && y != 0) {  // zero products are dropped (NaN is kept: != 0)
      const int e =
          detail::term_exponent(x, op.emin_a) + detail::term_exponent(y, op.emin_b) + op.scale_exp;
      e_max = e > e_max ? e : e_max;
    }
  }
  if (c != 0) {
    const int e = detail::term_exponent(c, -126);  // C is decomposed as an fp32 value
    e_max = e > e_max ? e : e_max;
  }
  // t_i = trunc(term_i 2^(F - E)): each an integer below 2^(F+2), so the sum is exact. An inf or
  // NaN term makes the sum inf or NaN whatever the scaling (E is then meaningless, and clamped).
  const double up_c = detail::pow2(P::kFracBits - e_max);
  const double up_p = detail::pow2(P::kFracBits - e_max + op.scale_exp);
  double sum = trunc(c * up_c);
  for (int i = 0; i < n; ++i) {
    double x = a[i * sa], y = b[i * sb];
    if constexpr (kTf32) {
      x = detail::truncate_to_tf32(x);
      y = detail::truncate_to_tf32(y);
    }
    sum += trunc((x * y) * up_p);
  }
  if (sum != sum) return detail::canonical_nan(out);
  if (fabs(sum) == static_cast<double>(INFINITY)) return sum;
  if (sum == 0) return 0.0;  // an exact zero sum is +0 (both models)
  return round_d(sum * detail::pow2(e_max - P::kFracBits), P::kE8m13, out);
}

// c + a . b over k elements, through profile P's instructions in increasing k: one fused
// dot-add per block of P::kBlock consecutive products from a[0], each D the next one's C (the
// split inside an instruction and the chaining between instructions are the same rule). With
// k == 0 nothing runs and c comes back as it is.
template <class P>
ATTNDEV_HD double dot(const Operands& op, const double* a, std::ptrdiff_t sa, const double* b,
                      std::ptrdiff_t sb, int k, double c, Output out = Output::fp32) {
  for (int k0 = 0; k0 < k; k0 += P::kBlock) {
    const int n = k - k0 < P::kBlock ? k - k0 : P::kBlock;
    c = fused_dot_add<P>(op, a + k0 * sa, sa, b + k0 * sb, sb, n, c, out);
  }
  return c;
}

// Block-scaled kinds (P::kKind == Kind::mxf8): as dot(), with one scale exponent per
// instruction (k32): scale_exp[j] = the exponent of A's ue8m0 scale plus B's for elements
// [32 j, 32 j + 32).
template <class P>
ATTNDEV_HD double dot_block_scaled(Format fa, Format fb, const double* a, std::ptrdiff_t sa,
                                   const double* b, std::ptrdiff_t sb, int k, const int* scale_exp,
                                   double c, Output out = Output::fp32) {
  static_assert(P::kKind == Kind::mxf8, "dot_block_scaled is for block-scaled profiles");
  for (int k0 = 0; k0 < k; k0 += P::kBlock) {
    const int n = k - k0 < P::kBlock ? k - k0 : P::kBlock;
    const Operands op = operands(fa, fb, scale_exp[k0 / P::kInstructionK]);
    c = fused_dot_add<P>(op, a + k0 * sa, sa, b + k0 * sb, sb, n, c, out);
  }
  return c;
}

// The dot of a run-time choice, for callers that pick a profile once and then call it in a loop
// (the emulator's GEMMs): the function with_profile chose, or nullptr where the combination does
// not exist.
using DotFunction = double (*)(const Operands&, const double*, std::ptrdiff_t, const double*,
                               std::ptrdiff_t, int, double, Output);

inline DotFunction dot_function(Arch arch, Instruction instruction, Kind kind) {
  DotFunction f = nullptr;
  with_profile(arch, instruction, kind, [&](auto profile) { f = &dot<decltype(profile)>; });
  return f;
}

// The profile's parameters as values, for messages, docs and the Python binding.
struct ProfileInfo {
  Arch arch = Arch::none;
  Kind kind = Kind::f16;
  int instruction_k = 0, block = 0, frac_bits = 0, min_exp = 0, min_exp_fp16 = 0;
  bool e8m13 = false;
};

inline bool profile_info(Arch arch, Instruction instruction, Kind kind, ProfileInfo& out) {
  return with_profile(arch, instruction, kind, [&](auto profile) {
    using P = decltype(profile);
    out = {P::kArch,     P::kKind,   P::kInstructionK, P::kBlock,
           P::kFracBits, P::kMinExp, P::kMinExpFp16,   P::kE8m13};
  });
}

}  // namespace attndev::numerics::mma
