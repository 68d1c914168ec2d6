// The quantized recipes' tensor-core dot products for 16 lanes at once (fast_quant.cpp) that
// tc_lanes.hpp's lane_chain (fp32 or fp16 D) and tc_float_lanes.hpp do not cover:
//   * nvf4_lanes: kind::mxf4nvf4 (SageAttention3 on sm_100) as nvf4_dot (quant_attention.cpp):
//     per k64 instruction four 16-element groups, each summed exactly and multiplied by its two
//     block scales (in float lanes: exact for e2m1 elements and e4m3 scales), the four sums and
//     C aligned to the largest exponent, truncated to 35 fraction bits, summed exactly, D toward
//     zero to fp32 (in double lanes).
// Block-scaled fp8 (kind::mxf8f6f4) needs no kernel of its own: its power-of-two scales are
// folded into the operands (value x 2^s, exponent + s), which gives lane_chain the same E and
// the same truncated terms (fast_quant.cpp says why that is exact).
// Bit-identical to the scalar models by construction, as lane_chain: each lane runs the model's
// steps on exact double values, lanes never mix, and a lane whose D is not finite is recomputed
// by the scalar model (its special-value rules). Tested against the scalar models in
// test_fast_quant.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attention/tc_float_lanes.hpp"
#include "attention/tc_lanes.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::detail::quant_lanes {

using tc_lanes::kLanes;
using tc_lanes::LaneOps;
using tc_lanes::round_fp32_rz;

// kind::mxf4nvf4's k per instruction, its scale groups and the fraction bits of its alignment
// (MMA-Sim, nv_ptx.py; the group sum's exponent read as floor(log2 |sum|): attndev's reading).
inline constexpr int kNvInstructionK = 64, kNvGroup = 16, kNvf4FracBits = 35;

// kLaneGroups x 16 lanes of nvf4_lanes at once: independent chains, so that neither the group
// sums' fused multiply-adds nor the alignment's steps wait on one chain's latency.
// The instructions from k_begin (a multiple of 64) to k of one row.
template <int kLaneGroups>
void nvf4_lane_groups(const float* a, const float* b, std::ptrdiff_t ldb, int k_begin, int k,
                      const float* scale_a, const float* scale_b, std::ptrdiff_t ld_sb,
                      double* acc) {
  using L = LaneOps;
  using LF = tc_lanes::LaneOpsF;
  using V = L::V;
  constexpr int kAll = kLaneGroups * kLanes;
  constexpr int kVecs = kAll / L::kWidth, kVf = kAll / LF::kWidth;
  constexpr int kGroups = kNvInstructionK / kNvGroup;
  const V zero = L::set1(0.0), min_e = L::set1(-133.0);
  const V f = L::set1(kNvf4FracBits);
  V c[kVecs];
  for (int v = 0; v < kVecs; ++v) c[v] = L::load(acc + v * L::kWidth);
  for (int k0 = k_begin; k0 < k; k0 += kNvInstructionK) {
    alignas(64) float term_f[kGroups][kAll];  // (groups, lanes)
    int count = 0;
    for (int g0 = k0; g0 < std::min(k, k0 + kNvInstructionK); g0 += kNvGroup, ++count) {
      // e2m1 products and every partial sum of them are exact, so a fused multiply-add is the
      // same and so is any order: even and odd j in two sums, twice the chains in flight.
      LF::F sum[kVf], odd[kVf];
      for (int v = 0; v < kVf; ++v) sum[v] = odd[v] = LF::set1f(0.0f);
      const int g1 = std::min(k, g0 + kNvGroup);
      int j = g0;
      for (; j + 1 < g1; j += 2) {
        const LF::F aj = LF::set1f(a[j]), aj1 = LF::set1f(a[j + 1]);
        for (int v = 0; v < kVf; ++v) {
          sum[v] = LF::fmaf(aj, LF::loadf(b + j * ldb + v * LF::kWidth), sum[v]);
          odd[v] = LF::fmaf(aj1, LF::loadf(b + (j + 1) * ldb + v * LF::kWidth), odd[v]);
        }
      }
      if (j < g1) {
        const LF::F aj = LF::set1f(a[j]);
        for (int v = 0; v < kVf; ++v)
          sum[v] = LF::fmaf(aj, LF::loadf(b + j * ldb + v * LF::kWidth), sum[v]);
      }
      for (int v = 0; v < kVf; ++v) sum[v] = LF::addf(sum[v], odd[v]);
      const LF::F sa = LF::set1f(scale_a[g0 / kNvGroup]);
      const float* sb = scale_b + (g0 / kNvGroup) * ld_sb;
      for (int v = 0; v < kVf; ++v)
        LF::storef(term_f[count] + v * LF::kWidth,
                   LF::mulf(LF::mulf(sum[v], sa), LF::loadf(sb + v * LF::kWidth)));
    }
    alignas(64) double terms[kGroups][kAll];  // (groups, lanes) exactly the floats
    for (int g = 0; g < count; ++g)
      for (int l = 0; l < kAll; ++l) terms[g][l] = term_f[g][l];
    for (int v = 0; v < kVecs; ++v) {
      // E over the nonzero terms and C: a zero's exponent (-inf from getexp, -1023 from the
      // field) never raises it; an inf or NaN makes the lane's D inf or NaN, which the caller
      // redoes.
      V e = L::max(min_e, L::exponent(c[v]));
      V t[kGroups];
      for (int g = 0; g < count; ++g) {
        t[g] = L::load(terms[g] + v * L::kWidth);
        e = L::max(e, L::exponent(t[g]));
      }
      const V up = L::pow2(L::sub(f, e));
      V sum = L::trunc(L::mul(c[v], up));
      for (int g = 0; g < count; ++g) sum = L::add(sum, L::trunc(L::mul(t[g], up)));
      const V exact = L::mul(sum, L::pow2(L::sub(e, f)));
#if defined(__AVX512F__)
      // The conversion's own rounding toward zero is round_fp32_rz's (subnormals kept), except
      // that it stops at the largest float where the model's D overflows to inf.
      const __m512d d = _mm512_maskz_cvtps_pd(
          0xFF, _mm512_maskz_cvt_roundpd_ps(0xFF, exact, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
      const V big = L::set1(0x1p128), inf = L::set1(static_cast<double>(INFINITY));
      const V rounded = L::if_lt(L::bits_and(exact, ~(std::uint64_t{1} << 63)), big, d,
                                 L::bits_or(inf, L::bits_and(exact, std::uint64_t{1} << 63)));
#else
      const V rounded = round_fp32_rz<23>(exact);
#endif
      c[v] = L::if_eq(sum, zero, zero, rounded);
    }
  }
  for (int v = 0; v < kVecs; ++v) L::store(acc + v * L::kWidth, c[v]);
}

// Rows [0, rows) of kLaneGroups x 16 lanes: one instruction of every row before the next, so
// that the instruction's block of b (64 x 64 floats) is read from L1 by every row.
template <int kLaneGroups>
void nvf4_rows(const float* a, std::ptrdiff_t lda, const float* b, std::ptrdiff_t ldb, const int* k,
               int rows, const float* scale_a, std::ptrdiff_t ld_sa, const float* scale_b,
               std::ptrdiff_t ld_sb, double* acc, std::ptrdiff_t ld_acc) {
  const int k_max = rows > 0 ? *std::max_element(k, k + rows) : 0;
  for (int k0 = 0; k0 < k_max; k0 += kNvInstructionK)
    for (int r = 0; r < rows; ++r)
      if (k0 < k[r])
        nvf4_lane_groups<kLaneGroups>(a + r * lda, b, ldb, k0, std::min(k[r], k0 + kNvInstructionK),
                                      scale_a + r * ld_sa, scale_b, ld_sb, acc + r * ld_acc);
}

// The D of nvf4_dot for rows x lanes, lanes = 16 x groups: acc[r ld_acc + l] (in: C, out: D)
// through the instructions over k[r] elements of row r of a (a[r lda + i], shared by the lanes)
// and b[i * ldb + l]; scale_a[r ld_sa + g] (one per 16 of a's row) and scale_b[g * ld_sb + l]
// (per lane). Lanes whose D is not finite are left to the caller. The operands are e2m1 values
// and the scales e4m3 values (or 0, NaN) as floats: a group's sum of products (multiples of 1/4
// up to 36, sixteen of them: at most 576) is exact in float lanes, and so is its term
// sum x sa x sb (at most 12 + 4 + 4 significant bits, between 2^-20 and 2^27). The
// instruction's alignment (35 fraction bits: beyond an int32) runs in double lanes.
inline void nvf4_lanes(const float* a, std::ptrdiff_t lda, const float* b, std::ptrdiff_t ldb,
                       const int* k, int rows, const float* scale_a, std::ptrdiff_t ld_sa,
                       const float* scale_b, std::ptrdiff_t ld_sb, int groups, double* acc,
                       std::ptrdiff_t ld_acc) {
  if (rows <= 0 || *std::max_element(k, k + rows) == 0) return;  // D is C; b may be empty
  for (int g = 0; g < groups; g += 4) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(g) * kLanes;
    switch (std::min(4, groups - g)) {
      case 1:
        nvf4_rows<1>(a, lda, b + off, ldb, k, rows, scale_a, ld_sa, scale_b + off, ld_sb, acc + off,
                     ld_acc);
        break;
      case 2:
        nvf4_rows<2>(a, lda, b + off, ldb, k, rows, scale_a, ld_sa, scale_b + off, ld_sb, acc + off,
                     ld_acc);
        break;
      case 3:
        nvf4_rows<3>(a, lda, b + off, ldb, k, rows, scale_a, ld_sa, scale_b + off, ld_sb, acc + off,
                     ld_acc);
        break;
      default:
        nvf4_rows<4>(a, lda, b + off, ldb, k, rows, scale_a, ld_sa, scale_b + off, ld_sb, acc + off,
                     ld_acc);
        break;
    }
  }
}

}  // namespace attndev::attention::detail::quant_lanes
