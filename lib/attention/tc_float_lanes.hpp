// The tensor-core model's dot-adds in float and int32 lanes: the form the fast path's GEMMs run
// on a profile (tc_simd_kernels.hpp), twice the lanes per vector of the double form (lane_chain)
// and about half its operations per product. Bit-identical to the scalar model (mma.hpp) by
// construction and by test (test_tc_float_lanes.cpp: every profile, random and adversarial
// operands, against lane_chain and mma::dot):
//   * operands are floats (every input format a profile reads, tf32 after truncation, is a
//     subset of fp32) with int32 exponents clamped at the format's emin (a zero: kZeroExponentF);
//     a zero's exponent never raises E and its terms are zero, so the loops run without a test
//     of a[i]; a caller whose operands hold inf or NaN (operands_f counts them) computes those
//     lanes with the scalar model (0 x inf is NaN there, and the lanes' terms are not);
//   * per block, E = max(kMinExp, e_c, e_a + e_b over the nonzero products), as the model;
//   * a term is t = trunc((a b) 2^(F - E)) in float, then int32. Exact where E is in the "float
//     range" F - 125 <= E <= 126: a b (at most 22 significant bits) is an exact float unless it
//     is below 2^-126, and then its term is below 2^(F - E - 126) <= 1/2 both before and after
//     the float product's rounding, so it truncates to 0 either way; 2^(F - E) is a normal float;
//     and t < 2^(F + 2) <= 2^27 is an exact float and int32. C's term likewise (|C| < 2^(E + 1));
//   * the t are summed in int32 partial sums of at most terms_per_sum(F) terms each
//     (15 * 2^27 + 2^26 < 2^31: no overflow), added with an overflow check (a block whose total
//     leaves int32 goes to the double form), and D = RZ(total to 24 bits) 2^(E - F) (LaneOpsF::
//     round_sum): exact, as D is never subnormal in the float range (|D| >= 2^(E - F) >=
//     2^-125) and overflows to inf as the model's does; e8m13 drops 10 more fraction bits; an
//     fp16 D is rounded to nearest even from the exact sum in double (round_fp16_lanes);
//   * a block with a lane outside the float range (tiny or huge operands, inf, NaN), or whose C
//     is not an fp32 value, runs through the double form (lane_chain), whose E and terms are the
//     same; a lane whose D is not finite is recomputed by the caller with the scalar model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attention/tc_lanes.hpp"

namespace attndev::attention::detail::tc_lanes {

// A float-lane operand's exponent: int16, so that the pass that finds each block's E (a max of
// sums of exponents) runs 16 lanes per 256-bit vector, half the work of int32 lanes on CPUs
// whose 512-bit units are two 256-bit halves. Every exponent fits: an element's is at most 127
// plus a folded block scale's 127, and a zero's sum with another zero's is -32768.
using Expo = std::int16_t;
// A zero operand's exponent: far below every product's, and a sum of two never overflows.
inline constexpr Expo kZeroExponentF = -16384;
// Terms an int32 partial sum holds: each |t| < 2^(F + 2), and C's term < 2^(F + 1) joins the
// first (15 for F = 24 or 25; every term of a block for F = 13, which then needs no check).
constexpr int terms_per_sum(int frac_bits) {
  return static_cast<int>(((std::int64_t{1} << 31) - (std::int64_t{1} << (frac_bits + 1))) >>
                          (frac_bits + 2));
}

// An inf or NaN operand's exponent in operands_f (fp32's all-ones field): no block takes it in
// the float lanes.
inline constexpr Expo kSpecialExponentF = 128;

// x[0, n) as float operands: value (tf32: its 13 low fraction bits dropped first) and exponent
// max(e, emin) (zero: kZeroExponentF; inf and NaN: kSpecialExponentF). Returns how many are inf
// or NaN: the lanes do not reproduce their products (0 x inf is NaN in the model), so a lane
// that reads one needs the scalar model.
template <class T>
int operands_f(const T* x, std::ptrdiff_t n, int emin, bool tf32, float* value, Expo* expo) {
  const std::uint32_t keep = tf32 ? 0xFFFFE000u : 0xFFFFFFFFu;
  int special = 0;
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(x[i]);  // exact: x holds a value of a format within fp32
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u &= keep;
    std::memcpy(&value[i], &u, sizeof u);
    const std::int32_t field = static_cast<std::int32_t>((u >> 23) & 0xFFu);
    special += field == 0xFF;
    expo[i] =
        (u & 0x7FFFFFFFu) == 0 ? kZeroExponentF : static_cast<Expo>(std::max(field - 127, emin));
  }
  return special;
}

// 16 lanes of floats and int32s: AVX-512 (one vector), AVX2 (two) or one at a time. Besides
// loads, stores and exact arithmetic: the exponent of an fp32 C as the model reads it
// (c_exponent), a range test of E (all_in), an int32 add that reports overflow (add_checked),
// and D from the exact integer sum (round_sum: RZ to 24 bits, times 2^(E - F), exact because
// in the float range D is a normal fp32 value or overflows to inf; e8m13 then drops 10 more bits).
#if defined(__AVX512F__)
// The zero-masked forms of max, shift and convert, as tc_lanes.hpp's LaneOps (GCC 12's unmasked
// ones start from an undefined vector, which -Wmaybe-uninitialized reports).
struct LaneOpsF {
  using F = __m512;
  using I = __m512i;
  static constexpr int kWidth = 16;
  static F loadf(const float* p) { return _mm512_loadu_ps(p); }
  static void storef(float* p, F v) { _mm512_storeu_ps(p, v); }
  static I loadi(const std::int32_t* p) { return _mm512_loadu_si512(p); }
  static void storei(std::int32_t* p, I v) { _mm512_storeu_si512(p, v); }
  static F set1f(float x) { return _mm512_set1_ps(x); }
  static I set1i(std::int32_t x) { return _mm512_set1_epi32(x); }
  static F mulf(F a, F b) { return _mm512_mul_ps(a, b); }
  static F addf(F a, F b) { return _mm512_add_ps(a, b); }
  static F fmaf(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static I addi(I a, I b) { return _mm512_add_epi32(a, b); }
  static I subi(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I maxi(I a, I b) { return _mm512_maskz_max_epi32(0xFFFF, a, b); }
  static I trunc_to_int(F a) { return _mm512_maskz_cvttps_epi32(0xFFFF, a); }
  // 2^e for e in [-126, 127] (a normal float).
  static F pow2f(I e) {
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, addi(e, set1i(127)), 23));
  }
  static I c_exponent(F c, std::int32_t min_exp) {
    const I u = _mm512_castps_si512(c);
    const I field = _mm512_and_si512(_mm512_maskz_srli_epi32(0xFFFF, u, 23), set1i(0xFF));
    const I e = maxi(subi(field, set1i(127)), set1i(-126));
    const __mmask16 zero = _mm512_testn_epi32_mask(u, set1i(0x7FFFFFFF));
    return _mm512_mask_blend_epi32(zero, e, set1i(min_exp));
  }
  static bool all_in(I e, std::int32_t lo, std::int32_t hi) {
    return _mm512_cmplt_epi32_mask(e, set1i(lo)) == 0 && _mm512_cmpgt_epi32_mask(e, set1i(hi)) == 0;
  }
  static bool add_checked(I a, I b, I& sum) {
    sum = addi(a, b);
    const I overflow = _mm512_and_si512(_mm512_xor_si512(a, sum), _mm512_xor_si512(b, sum));
    return _mm512_movepi32_mask(overflow) == 0;
  }
  // An fp16 D: the exact total x 2^(E - F) rounded to odd at 24 bits (RZ, then the sticky bit
  // of what the RZ dropped into the last place), then to nearest even fp16 by F16C: rounding
  // to odd first keeps the second rounding correct (24 >= 11 + 2 bits), for fp16 subnormals
  // too, and 65520 (where fp16 overflows) is even, so it is reached only when the total is.
  // Exact scaling needs E - F >= -126 (a normal float): fp16_in_range.
  static bool fp16_in_range(I e, int frac_bits) {
    return _mm512_cmplt_epi32_mask(e, set1i(frac_bits - 126)) == 0;
  }
  template <int kFracBits>
  static F round_sum_fp16(I total, I e) {
    const F rz =
        _mm512_maskz_cvt_roundepi32_ps(0xFFFF, total, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 inexact =
        _mm512_cmpneq_epi32_mask(_mm512_maskz_cvttps_epi32(0xFFFF, rz), total);
    const F odd = _mm512_castsi512_ps(
        _mm512_mask_or_epi32(_mm512_castps_si512(rz), inexact, _mm512_castps_si512(rz), set1i(1)));
    const F d = mulf(odd, pow2f(subi(e, set1i(kFracBits))));
    const __m256i h =
        _mm512_maskz_cvtps_ph(0xFFFF, d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_maskz_cvtph_ps(0xFFFF, h);
  }
  template <int kFracBits, bool kE8m13>
  static F round_sum(I total, I e) {
    const F rz =
        _mm512_maskz_cvt_roundepi32_ps(0xFFFF, total, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const F d = mulf(rz, pow2f(subi(e, set1i(kFracBits))));
    if constexpr (!kE8m13) return d;
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(d), set1i(~0x3FF)));
  }
};
#elif defined(__AVX2__)
struct LaneOpsF {
  using F = __m256;
  using I = __m256i;
  static constexpr int kWidth = 8;
  static F loadf(const float* p) { return _mm256_loadu_ps(p); }
  static void storef(float* p, F v) { _mm256_storeu_ps(p, v); }
  static I loadi(const std::int32_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void storei(std::int32_t* p, I v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  static F set1f(float x) { return _mm256_set1_ps(x); }
  static I set1i(std::int32_t x) { return _mm256_set1_epi32(x); }
  static F mulf(F a, F b) { return _mm256_mul_ps(a, b); }
  static F addf(F a, F b) { return _mm256_add_ps(a, b); }
  static F fmaf(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static I addi(I a, I b) { return _mm256_add_epi32(a, b); }
  static I subi(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I maxi(I a, I b) { return _mm256_max_epi32(a, b); }
  static I trunc_to_int(F a) { return _mm256_cvttps_epi32(a); }
  static F pow2f(I e) { return _mm256_castsi256_ps(_mm256_slli_epi32(addi(e, set1i(127)), 23)); }
  static I c_exponent(F c, std::int32_t min_exp) {
    const I u = _mm256_castps_si256(c);
    const I field = _mm256_and_si256(_mm256_srli_epi32(u, 23), set1i(0xFF));
    const I e = maxi(subi(field, set1i(127)), set1i(-126));
    const I zero = _mm256_cmpeq_epi32(_mm256_and_si256(u, set1i(0x7FFFFFFF)), set1i(0));
    return _mm256_blendv_epi8(e, set1i(min_exp), zero);
  }
  static bool all_in(I e, std::int32_t lo, std::int32_t hi) {
    const I out =
        _mm256_or_si256(_mm256_cmpgt_epi32(set1i(lo), e), _mm256_cmpgt_epi32(e, set1i(hi)));
    return _mm256_testz_si256(out, out) != 0;
  }
  static bool add_checked(I a, I b, I& sum) {
    sum = addi(a, b);
    const I overflow = _mm256_and_si256(_mm256_xor_si256(a, sum), _mm256_xor_si256(b, sum));
    return _mm256_movemask_ps(_mm256_castsi256_ps(overflow)) == 0;
  }
  // Through double: the sum and 2^(E - F) are exact there; dropping the fraction bits below
  // fp32's (or e8m13's) keep is the truncation, and the conversion to float is then exact.
  template <int kFracBits, bool kE8m13>
  static F round_sum(I total, I e) {
    constexpr long long kDrop = ~((1LL << (52 - (kE8m13 ? 13 : 23))) - 1);
    const I shift = addi(subi(e, set1i(kFracBits)), set1i(1023));
    __m128 half[2];
    for (int h = 0; h < 2; ++h) {
      const __m128i t = h ? _mm256_extracti128_si256(total, 1) : _mm256_castsi256_si128(total);
      const __m128i s = h ? _mm256_extracti128_si256(shift, 1) : _mm256_castsi256_si128(shift);
      const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepi32_epi64(s), 52));
      const __m256d d = _mm256_mul_pd(_mm256_cvtepi32_pd(t), scale);
      half[h] = _mm256_cvtpd_ps(_mm256_and_pd(d, _mm256_castsi256_pd(_mm256_set1_epi64x(kDrop))));
    }
    return _mm256_set_m128(half[1], half[0]);
  }
};
#else
struct LaneOpsF {
  using F = float;
  using I = std::int32_t;
  static constexpr int kWidth = 1;
  static F loadf(const float* p) { return *p; }
  static void storef(float* p, F v) { *p = v; }
  static I loadi(const std::int32_t* p) { return *p; }
  static void storei(std::int32_t* p, I v) { *p = v; }
  static F set1f(float x) { return x; }
  static I set1i(std::int32_t x) { return x; }
  static F mulf(F a, F b) { return a * b; }
  static F addf(F a, F b) { return a + b; }
  static F fmaf(F a, F b, F c) { return std::fma(a, b, c); }
  static I addi(I a, I b) { return a + b; }
  static I subi(I a, I b) { return a - b; }
  static I maxi(I a, I b) { return a < b ? b : a; }
  // As cvttps2dq: NaN and values beyond int32 give INT32_MIN (a cast would be undefined; such
  // lanes read inf or NaN operands and are the caller's to redo).
  static I trunc_to_int(F a) {
    return a > -0x1p31f && a < 0x1p31f ? static_cast<std::int32_t>(a) : INT32_MIN;
  }
  static F pow2f(I e) {
    const std::uint32_t u = static_cast<std::uint32_t>(e + 127) << 23;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
  }
  static I c_exponent(F c, std::int32_t min_exp) {
    std::uint32_t u;
    std::memcpy(&u, &c, sizeof u);
    if ((u & 0x7FFFFFFFu) == 0) return min_exp;
    return std::max(static_cast<std::int32_t>((u >> 23) & 0xFFu) - 127, -126);
  }
  static bool all_in(I e, std::int32_t lo, std::int32_t hi) { return e >= lo && e <= hi; }
  static bool add_checked(I a, I b, I& sum) {
    const std::int64_t wide = std::int64_t{a} + b;
    sum = static_cast<std::int32_t>(wide);
    return wide == sum;
  }
  template <int kFracBits, bool kE8m13>
  static F round_sum(I total, I e) {
    const double d = std::ldexp(static_cast<double>(total), e - kFracBits);  // exact
    std::uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    u &= ~((std::uint64_t{1} << (52 - (kE8m13 ? 13 : 23))) - 1u);
    double r;
    std::memcpy(&r, &u, sizeof r);
    return static_cast<float>(r);  // exact, or inf beyond the largest binade
  }
};
#endif

// 16 exponents (Expo) in one 256-bit vector where the build has AVX2 (AVX-512 builds too), else
// one at a time, and their widening into LaneOpsF's int32 vectors.
#if defined(__AVX2__)
struct ExpoLanes {
  using H = __m256i;
  static H load(const Expo* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static H set1(Expo x) { return _mm256_set1_epi16(x); }
  static H add(H a, H b) { return _mm256_add_epi16(a, b); }
  static H max(H a, H b) { return _mm256_max_epi16(a, b); }
  static void widen(H h, LaneOpsF::I* out) {
#if defined(__AVX512F__)
    out[0] = _mm512_maskz_cvtepi16_epi32(0xFFFF, h);  // zero-masked: see LaneOpsF
#else
    out[0] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(h));
    out[1] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(h, 1));
#endif
  }
};
#else
struct ExpoLanes {
  struct H {
    Expo v[kLanes];
  };
  static H load(const Expo* p) {
    H h;
    std::memcpy(h.v, p, sizeof h.v);
    return h;
  }
  static H set1(Expo x) {
    H h;
    std::fill(h.v, h.v + kLanes, x);
    return h;
  }
  static H add(H a, H b) {
    for (int l = 0; l < kLanes; ++l) a.v[l] = static_cast<Expo>(a.v[l] + b.v[l]);
    return a;
  }
  static H max(H a, H b) {
    for (int l = 0; l < kLanes; ++l) a.v[l] = std::max(a.v[l], b.v[l]);
    return a;
  }
  static void widen(H h, LaneOpsF::I* out) {
    for (int l = 0; l < kLanes; ++l) out[l] = h.v[l];
  }
};
#endif

// One block (n <= P::kBlock products from a, b) of the 16 lanes through the double form: the
// float operands widened (exactly) to lane_chain's.
template <class P, numerics::mma::Output kOut>
void double_block(const float* a, const Expo* ea, const float* b, const Expo* eb,
                  std::ptrdiff_t ldb, int n, double* acc) {
  alignas(64) double ad[P::kBlock], ead[P::kBlock];                    // (n)
  alignas(64) double bd[P::kBlock * kLanes], ebd[P::kBlock * kLanes];  // (n, 16)
  for (int i = 0; i < n; ++i) {
    ad[i] = a[i];
    ead[i] = ea[i];
    for (int l = 0; l < kLanes; ++l) {
      bd[i * kLanes + l] = b[i * ldb + l];
      ebd[i * kLanes + l] = eb[i * ldb + l];
    }
  }
  lane_chain<P, kOut>(ad, ead, bd, ebd, kLanes, n, acc);
}

// An fp16 D (SageAttention 1's and 2++'s P V accumulator) from the float lanes' exact integer
// sums: rounded to nearest even by the double lanes' round_lanes (tc_lanes.hpp), as lane_chain
// rounds it. An int32 sum and 2^(E - F) are exact in double, so D is the model's; the float form
// has no rounding of its own that could give it (an RZ convert to 24 bits and then to 11 would
// round twice).
template <class P, int kVf>
void round_fp16_lanes(const LaneOpsF::I* total, const LaneOpsF::I* e, float* out) {
  using L = LaneOps;
  constexpr int kN = kVf * LaneOpsF::kWidth;
  alignas(64) std::int32_t ti[kN], ei[kN];  // (lanes)
  for (int v = 0; v < kVf; ++v) {
    LaneOpsF::storei(ti + v * LaneOpsF::kWidth, total[v]);
    LaneOpsF::storei(ei + v * LaneOpsF::kWidth, e[v]);
  }
  alignas(64) double sum[kN], ed[kN];  // (lanes)
  for (int l = 0; l < kN; ++l) {
    sum[l] = ti[l];
    ed[l] = ei[l];
  }
  for (int l = 0; l < kN; l += L::kWidth)
    L::store(sum + l,
             round_lanes<P, numerics::mma::Output::fp16>(L::load(sum + l), L::load(ed + l)));
  for (int l = 0; l < kN; ++l) out[l] = static_cast<float>(sum[l]);  // fp16 values: exact
}

// One block [k0, k1) of one row's chain on kGroups groups of 16 lanes: c_buf (lanes) holds C as
// floats when fp32_c, else acc does; on return c_buf holds D (fp32_c true). The double form
// (lane_chain) runs the block where the float lanes cannot (E outside the float range, C not an
// fp32 value, an int32 sum that overflows), from acc.
template <class P, int kGroups, numerics::mma::Output kOut>
void chain_block(const float* a, const Expo* ea, const float* b, const Expo* eb, std::ptrdiff_t ldb,
                 int k0, int k1, float* c_buf, bool& fp32_c, double* acc) {
  static_assert(P::kFracBits <= 25, "float lanes need t < 2^27 (module comment)");
  using LF = LaneOpsF;
  constexpr int kLanesAll = kGroups * kLanes, kVf = kLanesAll / LF::kWidth;
  constexpr std::int32_t kFastMin = P::kFracBits - 125, kFastMax = 126;
  constexpr bool kFp16 = kOut == numerics::mma::Output::fp16;
  constexpr int kMinExp = kFp16 ? P::kMinExpFp16 : P::kMinExp;
  constexpr int kSumTerms = terms_per_sum(P::kFracBits);
  typename LF::F c[kVf], up[kVf];
  typename LF::I e[kVf], total[kVf];
  ExpoLanes::H eh[kGroups];  // (groups) max over the block of e_a + e_b, in int16
  for (int g = 0; g < kGroups; ++g) eh[g] = ExpoLanes::set1(INT16_MIN);
  for (int i = k0; i < k1; ++i) {  // a zero a[i]: kZeroExponentF never raises E
    const ExpoLanes::H ei = ExpoLanes::set1(ea[i]);
    for (int g = 0; g < kGroups; ++g)
      eh[g] = ExpoLanes::max(eh[g], ExpoLanes::add(ei, ExpoLanes::load(eb + i * ldb + g * kLanes)));
  }
  for (int g = 0; g < kGroups; ++g) ExpoLanes::widen(eh[g], e + g * (kLanes / LF::kWidth));
  for (int v = 0; v < kVf; ++v) {
    c[v] = LF::loadf(c_buf + v * LF::kWidth);
    e[v] = LF::maxi(e[v], LF::c_exponent(c[v], kMinExp));
  }
  bool fast = fp32_c;
  for (int v = 0; v < kVf; ++v) fast = fast && LF::all_in(e[v], kFastMin, kFastMax);
  if (fast) {
    for (int v = 0; v < kVf; ++v) {
      up[v] = LF::pow2f(LF::subi(LF::set1i(P::kFracBits), e[v]));
      total[v] = LF::trunc_to_int(LF::mulf(c[v], up[v]));
    }
    for (int g0 = k0; g0 < k1 && fast; g0 += kSumTerms) {
      typename LF::I part[kVf];
      for (int v = 0; v < kVf; ++v) part[v] = LF::set1i(0);
      for (int i = g0; i < std::min(k1, g0 + kSumTerms); ++i) {  // a zero a[i]: zero terms
        const typename LF::F ai = LF::set1f(a[i]);
        for (int v = 0; v < kVf; ++v) {
          const typename LF::F p = LF::mulf(ai, LF::loadf(b + i * ldb + v * LF::kWidth));
          part[v] = LF::addi(part[v], LF::trunc_to_int(LF::mulf(p, up[v])));
        }
      }
      for (int v = 0; v < kVf; ++v) {
        if constexpr (P::kBlock <= kSumTerms)
          total[v] = LF::addi(total[v], part[v]);  // the block's terms and C: no overflow
        else
          fast = LF::add_checked(total[v], part[v], total[v]) && fast;
      }
    }
  }
  if (fast) {
    if constexpr (kFp16) {
#if defined(__AVX512F__)
      bool in_range = true;  // AVX-512's native rounding (round_sum_fp16), else through double
      for (int v = 0; v < kVf; ++v) in_range = in_range && LF::fp16_in_range(e[v], P::kFracBits);
      if (in_range) {
        for (int v = 0; v < kVf; ++v)
          LF::storef(c_buf + v * LF::kWidth,
                     LF::template round_sum_fp16<P::kFracBits>(total[v], e[v]));
        return;
      }
#endif
      round_fp16_lanes<P, kVf>(total, e, c_buf);
    } else {
      for (int v = 0; v < kVf; ++v)
        LF::storef(c_buf + v * LF::kWidth,
                   LF::template round_sum<P::kFracBits, P::kE8m13>(total[v], e[v]));
    }
    return;
  }
  if (fp32_c)  // the double form from this block's C (acc holds it where C is not an fp32 value)
    for (int l = 0; l < kLanesAll; ++l) acc[l] = c_buf[l];
  for (int g = 0; g < kGroups; ++g)
    double_block<P, kOut>(a + k0, ea + k0, b + k0 * ldb + g * kLanes, eb + k0 * ldb + g * kLanes,
                          ldb, k1 - k0, acc + g * kLanes);
  fp32_c = true;  // D is an fp32 value (or inf / NaN, which stays what it is in float)
  for (int l = 0; l < kLanesAll; ++l) c_buf[l] = static_cast<float>(acc[l]);
}

// Rows [0, rows) of kGroups groups of 16 lanes at once: row r's chain over k[r] products of
// a[r lda + i] and b[i ldb + l], from C = acc[r ld_acc + l] (D on return). Several rows per
// block of b (blocks outer, rows inner) so that each block's b (at most 32 x 64 floats and
// exponents) is read from L1 by every row, not once per row from L2; the groups of a row are
// independent chains (one 16-lane chain leaves the vector units waiting on its latency).
template <class P, int kGroups, numerics::mma::Output kOut>
void lane_chain_groups(const float* a, std::ptrdiff_t lda, const Expo* ea, const float* b,
                       const Expo* eb, std::ptrdiff_t ldb, const int* k, int rows, double* acc,
                       std::ptrdiff_t ld_acc) {
  constexpr int kLanesAll = kGroups * kLanes, kRows = 8;
  for (int r0 = 0; r0 < rows; r0 += kRows) {
    const int nr = std::min(kRows, rows - r0);
    alignas(64) float c_buf[kRows][kLanesAll];  // (rows, lanes) C, then each block's D
    bool fp32_c[kRows];
    int k_max = 0;
    for (int r = 0; r < nr; ++r) {
      const double* ar = acc + (r0 + r) * ld_acc;  // (lanes)
      int inexact = 0;                             // a loop that vectorizes (no && chain)
      for (int l = 0; l < kLanesAll; ++l) {
        c_buf[r][l] = static_cast<float>(ar[l]);
        inexact |= static_cast<int>(static_cast<double>(c_buf[r][l]) != ar[l]);
      }
      fp32_c[r] = inexact == 0;
      k_max = std::max(k_max, k[r0 + r]);
    }
    for (int k0 = 0; k0 < k_max; k0 += P::kBlock)
      for (int r = 0; r < nr; ++r) {
        const int kr = k[r0 + r];
        if (k0 >= kr) continue;
        const std::ptrdiff_t row = r0 + r;
        chain_block<P, kGroups, kOut>(a + row * lda, ea + row * lda, b, eb, ldb, k0,
                                      std::min(kr, k0 + P::kBlock), c_buf[r], fp32_c[r],
                                      acc + row * ld_acc);
      }
    for (int r = 0; r < nr; ++r)
      if (fp32_c[r])  // else no block ran (k == 0) and acc is C as it came
        for (int l = 0; l < kLanesAll; ++l) acc[(r0 + r) * ld_acc + l] = c_buf[r][l];
  }
}

// As lane_chain, on float operands and int32 exponents (operands_f), for rows x lanes output
// elements, lanes = 16 x groups: acc[r ld_acc + l] (in: C; out: D of type kOut) through the
// dot-adds of a[r lda + i] b[i ldb + l], i < k[r]. A row with k[r] = 0 keeps its C (and its a
// is not read).
template <class P, numerics::mma::Output kOut = numerics::mma::Output::fp32>
void lane_chain_rows_f(const float* a, std::ptrdiff_t lda, const Expo* ea, const float* b,
                       const Expo* eb, std::ptrdiff_t ldb, const int* k, int rows, int groups,
                       double* acc, std::ptrdiff_t ld_acc) {
  // No dot-add runs when every k is 0: D is C as it came, and b may be empty (a null pointer,
  // which must not be offset).
  if (rows <= 0 || *std::max_element(k, k + rows) == 0) return;
  for (int g = 0; g < groups; g += 4) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(g) * kLanes;
    switch (std::min(4, groups - g)) {
      case 1:
        lane_chain_groups<P, 1, kOut>(a, lda, ea, b + off, eb + off, ldb, k, rows, acc + off,
                                      ld_acc);
        break;
      case 2:
        lane_chain_groups<P, 2, kOut>(a, lda, ea, b + off, eb + off, ldb, k, rows, acc + off,
                                      ld_acc);
        break;
      case 3:
        lane_chain_groups<P, 3, kOut>(a, lda, ea, b + off, eb + off, ldb, k, rows, acc + off,
                                      ld_acc);
        break;
      default:
        lane_chain_groups<P, 4, kOut>(a, lda, ea, b + off, eb + off, ldb, k, rows, acc + off,
                                      ld_acc);
        break;
    }
  }
}

// One row: acc[l] (in: C; out: D), l < 16 x groups, through the dot-adds of a[i] b[i ldb + l].
template <class P, numerics::mma::Output kOut = numerics::mma::Output::fp32>
void lane_chain_f(const float* a, const Expo* ea, const float* b, const Expo* eb,
                  std::ptrdiff_t ldb, int k, int groups, double* acc) {
  lane_chain_rows_f<P, kOut>(a, 0, ea, b, eb, ldb, &k, 1, groups, acc, 0);
}

using LaneChainF = void (*)(const float*, const Expo*, const float*, const Expo*, std::ptrdiff_t,
                            int, int, double*);
using LaneChainRowsF = void (*)(const float*, std::ptrdiff_t, const Expo*, const float*,
                                const Expo*, std::ptrdiff_t, const int*, int, int, double*,
                                std::ptrdiff_t);

}  // namespace attndev::attention::detail::tc_lanes
