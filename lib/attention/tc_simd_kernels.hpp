// The fast path's QK^T and P V on a tensor-core profile: numerics/mma.hpp's fused dot-adds,
// computed for 16 output elements at once (keys of a score row, or columns of an O row), with the
// interface of rows::ScalarKernels. Bit-identical to the scalar model by construction, and
// tested (test_tc_gemm.cpp: fast path = generic path under every profile):
//   * every step of a dot-add is the model's, per lane: E = max(kMinExp, e_c, e_a + e_b over the
//     nonzero products), t = trunc(x y 2^(F - E)) (exact: see mma.hpp), the sum exact in double,
//     D = the profile's rounding; only the loop order over lanes is new, and lanes never mix;
//   * operands are converted to double once per call, with their exponents clamped at the
//     format's emin (a zero gets -10^4: it never raises E), tf32 operands truncated first;
//   * a lane whose result is not finite (an inf or NaN operand, an overflow) is recomputed by the
//     scalar model, which owns the special-value rules (canonical NaN).
// Why: the generic path computes each term through a call chain (about 60 times the fast path's
// time at N = 4096, d = 128); these loops vectorize (docs/numerics.md, "Tensor cores", has the
// measured cost).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "attention/kernels.hpp"
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

// x and its exponent as the dot-add reads them (tf32: truncated first; zero: kZeroExponent).
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

// The 16 lanes' D after a chain over k products: acc[l] (in: C, out: D) through the profile's
// dot-adds of a[i] b[i * ldb + l], i = 0, 1, ..., k-1, blocks of P::kBlock from i = 0.
// ea / eb: the operands' exponents (operand()). Per lane, the steps of mma::fused_dot_add.
template <class P>
void lane_chain(const double* a, const double* ea, const double* b, const double* eb,
                std::ptrdiff_t ldb, int k, double* acc) {
  using L = LaneOps;
  using V = L::V;
  constexpr int kVecs = kLanes / L::kWidth;
  constexpr int kKeep = P::kE8m13 ? 13 : 23;
  constexpr std::uint64_t kKeepMask =
      ~((std::uint64_t{1} << (52 - kKeep)) - 1u) & ~(std::uint64_t{1} << 63);
  const V min_e = L::set1(P::kMinExp), fp32_emin = L::set1(-126.0), f = L::set1(P::kFracBits);
  const V zero = L::set1(0.0), inf = L::set1(static_cast<double>(INFINITY));
  const V sub_up = L::set1(std::ldexp(1.0, 126 + kKeep)),
          sub_down = L::set1(std::ldexp(1.0, -126 - kKeep));
  const V smallest_normal = L::set1(0x1p-126), overflow = L::set1(0x1p128);
  V c[kVecs];
  for (int v = 0; v < kVecs; ++v) c[v] = L::load(acc + v * L::kWidth);
  for (int k0 = 0; k0 < k; k0 += P::kBlock) {
    const int k1 = std::min(k, k0 + P::kBlock);
    V e[kVecs], up[kVecs], sum[kVecs];
    for (int v = 0; v < kVecs; ++v)  // C's exponent as an fp32 value's; C = 0 takes no part
      e[v] = L::if_eq(c[v], zero, min_e, L::max(min_e, L::max(L::exponent(c[v]), fp32_emin)));
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
    for (int v = 0; v < kVecs; ++v) {  // mma::round_d for an fp32 D
      const V d = L::mul(sum[v], L::pow2(L::sub(e[v], f)));
      const V mag = L::bits_and(d, ~(std::uint64_t{1} << 63));
      const V normal = L::bits_and(mag, kKeepMask);
      const V sub = L::mul(L::trunc(L::mul(mag, sub_up)), sub_down);
      V r = L::if_lt(mag, smallest_normal, sub, normal);
      r = L::if_lt(mag, overflow, r, inf);
      r = L::bits_or(r, L::bits_and(d, std::uint64_t{1} << 63));
      c[v] = L::if_eq(sum[v], zero, zero, r);
    }
  }
  for (int v = 0; v < kVecs; ++v) L::store(acc + v * L::kWidth, c[v]);
}

using LaneChain = void (*)(const double*, const double*, const double*, const double*,
                           std::ptrdiff_t, int, double*);

// One GEMM's profile: the lane chain, the scalar model for the lanes it hands back, the operands.
struct Gemm {
  LaneChain chain = nullptr;
  numerics::mma::DotFunction dot = nullptr;
  numerics::mma::Operands operands{};
  bool tf32 = false;
};

inline Gemm gemm_of(numerics::mma::Arch arch, numerics::Format fa, numerics::Format fb) {
  namespace mma = numerics::mma;
  Gemm g;
  mma::Kind kind{};
  mma::kind_of(fa, fb, kind);
  const mma::Instruction ins = mma::default_instruction(arch);
  mma::with_profile(arch, ins, kind,
                    [&](auto profile) { g.chain = &lane_chain<decltype(profile)>; });
  g.dot = mma::dot_function(arch, ins, kind);
  g.operands = mma::operands(fa, fb);
  g.tf32 = kind == mma::Kind::tf32;
  return g;
}

// Lanes whose D is not finite, again through the scalar model from C = c0[l].
inline void redo_special_lanes(const Gemm& g, const double* a, const double* b, std::ptrdiff_t ldb,
                               int k, const double* c0, double* acc) {
  for (int l = 0; l < kLanes; ++l)
    if (!std::isfinite(acc[l]))
      acc[l] = g.dot(g.operands, a, 1, b + l, ldb, k, c0[l], numerics::mma::Output::fp32);
}

}  // namespace tc_lanes

template <class T>
struct TcSimdKernels {
  const Packed<T>& pk;
  int bh;  // flat (batch * H + head)
  tc_lanes::Gemm qk, pv_gemm;

  // S of rows [row_begin, +rows) against keys j0 + [0, n[r]): the K tile in lanes of keys.
  template <class A>
  void scores(const A&, int row_begin, int rows, int j0, const int* n, T* s, int ld_s) const {
    using namespace tc_lanes;
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, n[r]);
    if (n_max == 0) return;
    const int d = pk.d, ldb = (n_max + kLanes - 1) / kLanes * kLanes;
    const double emin_q = numerics::traits(qk.operands.a).min_exponent;
    const double emin_k = numerics::traits(qk.operands.b).min_exponent;
    const T* tile = pk.kt_tile(bh, j0 / pk.block);                   // (d, padded)
    std::vector<double> kb(static_cast<std::size_t>(d) * ldb, 0.0);  // (d, ldb) K^T as read
    std::vector<double> ke(kb.size(), kZeroExponent);                // (d, ldb) its exponents
    for (int t = 0; t < d; ++t)
      for (int j = 0; j < n_max; ++j)
        operand(static_cast<double>(tile[static_cast<std::size_t>(t) * pk.padded + j]), emin_k,
                qk.tf32, kb[static_cast<std::size_t>(t) * ldb + j],
                ke[static_cast<std::size_t>(t) * ldb + j]);
    std::vector<double> qa(static_cast<std::size_t>(d)), qe(qa.size());  // (d) one Q row
    const double zero[kLanes] = {};
    for (int r = 0; r < rows; ++r) {
      const T* q = pk.q_head(bh) + static_cast<std::size_t>(row_begin + r) * d;  // (d)
      for (int t = 0; t < d; ++t) operand(static_cast<double>(q[t]), emin_q, qk.tf32, qa[t], qe[t]);
      for (int c0 = 0; c0 < n[r]; c0 += kLanes) {
        alignas(64) double acc[kLanes] = {};
        qk.chain(qa.data(), qe.data(), kb.data() + c0, ke.data() + c0, ldb, d, acc);
        redo_special_lanes(qk, qa.data(), kb.data() + c0, ldb, d, zero, acc);
        for (int l = 0; l < kLanes && c0 + l < n[r]; ++l)
          s[static_cast<std::size_t>(r) * ld_s + c0 + l] = static_cast<T>(acc[l]);
      }
    }
  }

  // acc(r, t) = the chain over the block's keys [0, count[r]) with C = acc(r, t): V rows in lanes
  // of output columns.
  template <class A>
  void pv(const A&, const T* p, int ld_p, const int* count, int rows, int j0, T* acc,
          int ld_acc) const {
    using namespace tc_lanes;
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, count[r]);
    if (n_max == 0) return;
    const int d = pk.d, ldb = (d + kLanes - 1) / kLanes * kLanes;
    const double emin_p = numerics::traits(pv_gemm.operands.a).min_exponent;
    const double emin_v = numerics::traits(pv_gemm.operands.b).min_exponent;
    const T* v = pk.v_head(bh) + static_cast<std::size_t>(j0) * pk.ld_v;  // (n_max, ld_v)
    std::vector<double> vb(static_cast<std::size_t>(n_max) * ldb, 0.0);   // (n_max, ldb)
    std::vector<double> ve(vb.size(), kZeroExponent);                     // (n_max, ldb)
    for (int j = 0; j < n_max; ++j)
      for (int t = 0; t < d; ++t)
        operand(static_cast<double>(v[static_cast<std::size_t>(j) * pk.ld_v + t]), emin_v,
                pv_gemm.tf32, vb[static_cast<std::size_t>(j) * ldb + t],
                ve[static_cast<std::size_t>(j) * ldb + t]);
    std::vector<double> pa(static_cast<std::size_t>(n_max)), pe(pa.size());  // (n_max) a P row
    for (int r = 0; r < rows; ++r) {
      if (count[r] == 0) continue;
      const T* p_r = p + static_cast<std::size_t>(r) * ld_p;  // (count[r])
      for (int j = 0; j < count[r]; ++j)
        operand(static_cast<double>(p_r[j]), emin_p, pv_gemm.tf32, pa[j], pe[j]);
      T* acc_r = acc + static_cast<std::size_t>(r) * ld_acc;  // (d)
      for (int c0 = 0; c0 < d; c0 += kLanes) {
        alignas(64) double lanes[kLanes] = {}, c_in[kLanes] = {};
        for (int l = 0; l < kLanes && c0 + l < d; ++l) lanes[l] = c_in[l] = acc_r[c0 + l];
        pv_gemm.chain(pa.data(), pe.data(), vb.data() + c0, ve.data() + c0, ldb, count[r], lanes);
        redo_special_lanes(pv_gemm, pa.data(), vb.data() + c0, ldb, count[r], c_in, lanes);
        for (int l = 0; l < kLanes && c0 + l < d; ++l) acc_r[c0 + l] = static_cast<T>(lanes[l]);
      }
    }
  }
};

}  // namespace attndev::attention::detail
