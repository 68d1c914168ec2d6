// The tensor-core model's dot-adds for 16 lanes at once, in double lanes (the form every
// operand range takes; tc_float_lanes.hpp has the faster float form for the common range):
//   * every step of a dot-add is the model's, per lane: E = max(kMinExp, e_c, e_a + e_b over the
//     nonzero products), t = trunc(x y 2^(F - E)) (exact: see mma.hpp), the sum exact in double,
//     D = the profile's rounding; only the loop order over lanes is new, and lanes never mix;
//   * operands are doubles, with their exponents clamped at the format's emin (a zero gets
//     kZeroExponent: it never raises E), tf32 operands truncated first.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "numerics/mma.hpp"

namespace attndev::attention::detail {

namespace tc_lanes {

inline constexpr int kLanes = 16;
inline constexpr double kZeroExponent = -1e4;  // a zero operand: never the largest

inline double exponent_of(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return static_cast<double>(static_cast<int>((u >> 52) & 0x7FFu) - 1023);
}
// 2^e for an integral double e, clamped into the normal range.
inline double pow2_of(double e) {
  e = std::clamp(e, -1022.0, 1023.0);
  const std::uint64_t u = static_cast<std::uint64_t>(static_cast<std::int64_t>(e) + 1023) << 52;
  double r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

// x and its exponent as the double lanes read them (tf32: truncated first; zero: kZeroExponent).
inline void operand(double x, double emin, bool tf32, double& value, double& exponent) {
  value = tf32 ? numerics::mma::detail::truncate_to_tf32(x) : x;
  exponent = value == 0 ? kZeroExponent : std::max(exponent_of(value), emin);
}

// The lanes' arithmetic: AVX-512 (8 doubles), AVX2 (4) or one at a time, as the build allows
// (kernels.hpp's Simd chooses the same way). Only exact operations: + and * of values whose
// results are exact or truncated right after, trunc, max, bit masks, powers of two.
#if defined(__AVX512F__)
// The zero-masked forms (all lanes kept) of max, min, getexp, scalef and roundscale: GCC 12's
// unmasked ones start from _mm512_undefined_pd, which -Wmaybe-uninitialized reports.
struct LaneOps {
  using V = __m512d;
  static constexpr int kWidth = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V max(V a, V b) { return _mm512_maskz_max_pd(0xFF, a, b); }
  static V trunc(V a) {
    return _mm512_maskz_roundscale_pd(0xFF, a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  }
  // floor(log2 |a|) of a normal nonzero double.
  static V exponent(V a) { return _mm512_maskz_getexp_pd(0xFF, a); }
  // 2^e for integral e (clamped into the normal range, as pow2_of).
  static V pow2(V e) {
    const V clamped = _mm512_maskz_min_pd(0xFF, max(e, set1(-1022.0)), set1(1023.0));
    return _mm512_maskz_scalef_pd(0xFF, set1(1.0), clamped);
  }
  static V bits_and(V a, std::uint64_t m) {
    return _mm512_castsi512_pd(
        _mm512_and_si512(_mm512_castpd_si512(a), _mm512_set1_epi64(static_cast<long long>(m))));
  }
  static V bits_or(V a, V b) {
    return _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(a), _mm512_castpd_si512(b)));
  }
  // a < b ? x : y, and a == b ? x : y.
  static V if_lt(V a, V b, V x, V y) {
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_LT_OQ), y, x);
  }
  static V if_eq(V a, V b, V x, V y) {
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), y, x);
  }
};
#elif defined(__AVX2__)
struct LaneOps {
  using V = __m256d;
  static constexpr int kWidth = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
  static V trunc(V a) { return _mm256_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static V exponent(V a) {
    // The biased exponent field as the low bits of 2^52 + field, then minus 2^52 + 1023.
    const __m256i field =
        _mm256_and_si256(_mm256_srli_epi64(_mm256_castpd_si256(a), 52), _mm256_set1_epi64x(0x7FF));
    const V as_double =
        _mm256_castsi256_pd(_mm256_or_si256(field, _mm256_set1_epi64x(0x4330000000000000)));
    return _mm256_sub_pd(as_double, set1(0x1p52 + 1023.0));
  }
  static V pow2(V e) {
    e = _mm256_min_pd(_mm256_max_pd(e, set1(-1022.0)), set1(1023.0));
    // e + 1023 in the low bits of 2^52 + e + 1023, moved up into the exponent field.
    const V t = _mm256_add_pd(e, set1(0x1p52 + 1023.0));
    return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(t), 52));
  }
  static V bits_and(V a, std::uint64_t m) {
    return _mm256_and_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(m))));
  }
  static V bits_or(V a, V b) { return _mm256_or_pd(a, b); }
  static V if_lt(V a, V b, V x, V y) {
    return _mm256_blendv_pd(y, x, _mm256_cmp_pd(a, b, _CMP_LT_OQ));
  }
  static V if_eq(V a, V b, V x, V y) {
    return _mm256_blendv_pd(y, x, _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
  }
};
#else
struct LaneOps {
  using V = double;
  static constexpr int kWidth = 1;
  static V load(const double* p) { return *p; }
  static void store(double* p, V v) { *p = v; }
  static V set1(double x) { return x; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V max(V a, V b) { return a < b ? b : a; }
  static V trunc(V a) { return std::trunc(a); }
  static V exponent(V a) { return exponent_of(a); }
  static V pow2(V e) { return pow2_of(e); }
  static V bits_and(V a, std::uint64_t m) {
    std::uint64_t u;
    std::memcpy(&u, &a, sizeof u);
    u &= m;
    std::memcpy(&a, &u, sizeof a);
    return a;
  }
  static V bits_or(V a, V b) {
    std::uint64_t u, w;
    std::memcpy(&u, &a, sizeof u);
    std::memcpy(&w, &b, sizeof w);
    u |= w;
    std::memcpy(&a, &u, sizeof a);
    return a;
  }
  static V if_lt(V a, V b, V x, V y) { return a < b ? x : y; }
  static V if_eq(V a, V b, V x, V y) { return a == b ? x : y; }
};
#endif

// mma::round_d for an fp32 D (toward zero to kKeep fraction bits, subnormals kept, inf from
// 2^128 up), on lanes of exact values d.
template <int kKeep>
inline LaneOps::V round_fp32_rz(LaneOps::V d) {
  using L = LaneOps;
  constexpr std::uint64_t kKeepMask =
      ~((std::uint64_t{1} << (52 - kKeep)) - 1u) & ~(std::uint64_t{1} << 63);
  const L::V mag = L::bits_and(d, ~(std::uint64_t{1} << 63));
  const L::V normal = L::bits_and(mag, kKeepMask);
  const L::V sub = L::mul(L::trunc(L::mul(mag, L::set1(std::ldexp(1.0, 126 + kKeep)))),
                          L::set1(std::ldexp(1.0, -126 - kKeep)));
  L::V r = L::if_lt(mag, L::set1(0x1p-126), sub, normal);
  r = L::if_lt(mag, L::set1(0x1p128), r, L::set1(static_cast<double>(INFINITY)));
  return L::bits_or(r, L::bits_and(d, std::uint64_t{1} << 63));
}

// round_to(fp16, d) of lanes of exact normal doubles: the quantum 2^(max(e, -14) - 10), the
// quotient (below 2^11) rounded to an integer by adding and subtracting 2^52 (the double
// adder's own nearest-even; the build never reassociates), inf above 65504.
inline LaneOps::V round_fp16_rne(LaneOps::V d) {
  using L = LaneOps;
  const L::V mag = L::bits_and(d, ~(std::uint64_t{1} << 63));
  const L::V e = L::max(L::exponent(mag), L::set1(-14.0));
  const L::V x = L::mul(mag, L::pow2(L::sub(L::set1(10.0), e)));
  const L::V whole = L::sub(L::add(x, L::set1(0x1p52)), L::set1(0x1p52));
  L::V r = L::mul(whole, L::pow2(L::sub(e, L::set1(10.0))));
  r = L::if_lt(L::set1(65504.0), r, L::set1(static_cast<double>(INFINITY)), r);
  return L::bits_or(r, L::bits_and(d, std::uint64_t{1} << 63));
}

// E's start for 16 / kWidth lanes of C: C's exponent as an fp32 value's, at least min_exp (the
// profile's kMinExp, or kMinExpFp16 for an fp16 D); C = 0 takes no part.
inline LaneOps::V c_exponent_lanes(LaneOps::V c, double min_exp) {
  using L = LaneOps;
  const L::V min_e = L::set1(min_exp);
  return L::if_eq(c, L::set1(0.0), min_e, L::max(min_e, L::max(L::exponent(c), L::set1(-126.0))));
}

// D of 16 / kWidth lanes from the exact sum of the truncated terms (integers) and the block's
// alignment exponent e, rounded as mma::round_d rounds D of type kOut (fp32: toward zero to 23
// or, e8m13, 13 fraction bits; fp16: to nearest even); a zero sum gives +0.
template <class P, numerics::mma::Output kOut>
LaneOps::V round_lanes(LaneOps::V sum, LaneOps::V e) {
  using L = LaneOps;
  const L::V d = L::mul(sum, L::pow2(L::sub(e, L::set1(P::kFracBits))));
  L::V r;
  if constexpr (kOut == numerics::mma::Output::fp16)
    r = round_fp16_rne(d);
  else
    r = round_fp32_rz < P::kE8m13 ? 13 : 23 > (d);
  return L::if_eq(sum, L::set1(0.0), L::set1(0.0), r);
}

// The 16 lanes' D after a chain over k products: acc[l] (in: C, out: D, values of kOut) through
// the profile's dot-adds of a[i] b[i * ldb + l], i = 0, 1, ..., k-1, blocks of P::kBlock from
// i = 0. ea / eb: the operands' exponents (max(e, emin); a zero: kZeroExponent). Per lane, the
// steps of mma::fused_dot_add; an fp16 D (SageAttention 1's and 2++'s P V accumulator) starts
// E at kMinExpFp16 and rounds to nearest even, inf beyond 65504.
template <class P, numerics::mma::Output kOut = numerics::mma::Output::fp32>
void lane_chain(const double* a, const double* ea, const double* b, const double* eb,
                std::ptrdiff_t ldb, int k, double* acc) {
  using L = LaneOps;
  using V = L::V;
  constexpr int kVecs = kLanes / L::kWidth;
  constexpr double kMinExp = kOut == numerics::mma::Output::fp16 ? P::kMinExpFp16 : P::kMinExp;
  const V f = L::set1(P::kFracBits);
  V c[kVecs];
  for (int v = 0; v < kVecs; ++v) c[v] = L::load(acc + v * L::kWidth);
  for (int k0 = 0; k0 < k; k0 += P::kBlock) {
    const int k1 = std::min(k, k0 + P::kBlock);
    V e[kVecs], up[kVecs], sum[kVecs];
    for (int v = 0; v < kVecs; ++v) e[v] = c_exponent_lanes(c[v], kMinExp);
    for (int i = k0; i < k1; ++i) {
      if (a[i] == 0) continue;
      const V ei = L::set1(ea[i]);
      for (int v = 0; v < kVecs; ++v)
        e[v] = L::max(e[v], L::add(ei, L::load(eb + i * ldb + v * L::kWidth)));
    }
    for (int v = 0; v < kVecs; ++v) {
      up[v] = L::pow2(L::sub(f, e[v]));
      sum[v] = L::trunc(L::mul(c[v], up[v]));
    }
    for (int i = k0; i < k1; ++i) {
      if (a[i] == 0) continue;
      const V ai = L::set1(a[i]);
      for (int v = 0; v < kVecs; ++v)
        sum[v] = L::add(sum[v],
                        L::trunc(L::mul(L::mul(ai, L::load(b + i * ldb + v * L::kWidth)), up[v])));
    }
    for (int v = 0; v < kVecs; ++v) c[v] = round_lanes<P, kOut>(sum[v], e[v]);
  }
  for (int v = 0; v < kVecs; ++v) L::store(acc + v * L::kWidth, c[v]);
}

using LaneChain = void (*)(const double*, const double*, const double*, const double*,
                           std::ptrdiff_t, int, double*);

}  // namespace tc_lanes

}  // namespace attndev::attention::detail
