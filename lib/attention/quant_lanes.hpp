// The quantized recipes' tensor-core dot products for 16 lanes at once (fast_quant.cpp), beside
// tc_simd_kernels.hpp's lane_chain (fp32 D), which the recipes use as it is:
//   * lane_chain_fp16: the same chain with an fp16 D (SageAttention 1's and 2++'s fp16 P V
//     accumulator): E starts at the profile's kMinExpFp16 and D is rounded to nearest even
//     fp16, inf beyond 65504, as mma::round_d does for Output::fp16;
//   * nvf4_lanes: kind::mxf4nvf4 (SageAttention3 on sm_100) as nvf4_dot (quant_attention.cpp):
//     per k64 instruction four 16-element groups, each summed exactly and multiplied by its two
//     block scales, the four sums and C aligned to the largest exponent, truncated to 35
//     fraction bits, summed exactly, D toward zero to fp32.
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

#include "attention/tc_simd_kernels.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::detail::quant_lanes {

using tc_lanes::kLanes;
using tc_lanes::LaneOps;

// kind::mxf4nvf4's k per instruction, its scale groups and the fraction bits of its alignment
// (MMA-Sim, nv_ptx.py; the group sum's exponent read as floor(log2 |sum|): attndev's reading).
inline constexpr int kNvInstructionK = 64, kNvGroup = 16, kNvf4FracBits = 35;

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

// tc_lanes::lane_chain with an fp16 D (C and D hold fp16 values).
template <class P>
void lane_chain_fp16(const double* a, const double* ea, const double* b, const double* eb,
                     std::ptrdiff_t ldb, int k, double* acc) {
  using L = LaneOps;
  using V = L::V;
  constexpr int kVecs = kLanes / L::kWidth;
  const V min_e = L::set1(P::kMinExpFp16), fp32_emin = L::set1(-126.0), f = L::set1(P::kFracBits);
  const V zero = L::set1(0.0);
  V c[kVecs];
  for (int v = 0; v < kVecs; ++v) c[v] = L::load(acc + v * L::kWidth);
  for (int k0 = 0; k0 < k; k0 += P::kBlock) {
    const int k1 = std::min(k, k0 + P::kBlock);
    V e[kVecs], up[kVecs], sum[kVecs];
    for (int v = 0; v < kVecs; ++v)  // C decomposed as an fp32 value; C = 0 takes no part
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
    for (int v = 0; v < kVecs; ++v) {
      const V r = round_fp16_rne(L::mul(sum[v], L::pow2(L::sub(e[v], f))));
      c[v] = L::if_eq(sum[v], zero, zero, r);
    }
  }
  for (int v = 0; v < kVecs; ++v) L::store(acc + v * L::kWidth, c[v]);
}

// The 16 lanes' D of nvf4_dot: acc[l] (in: C, out: D) through the instructions over k elements
// of a (one per k, shared by the lanes) and b[i * ldb + l]; scale_a[g] (one per 16 of a) and
// scale_b[g * ld_sb + l] (per lane). Lanes whose D is not finite are left to the caller.
inline void nvf4_lanes(const double* a, const double* b, std::ptrdiff_t ldb, int k,
                       const double* scale_a, const double* scale_b, std::ptrdiff_t ld_sb,
                       double* acc) {
  using L = LaneOps;
  using V = L::V;
  constexpr int kVecs = kLanes / L::kWidth;
  constexpr int kGroups = kNvInstructionK / kNvGroup;
  const V zero = L::set1(0.0), min_e = L::set1(-133.0),
          inf = L::set1(static_cast<double>(INFINITY));
  const V f = L::set1(kNvf4FracBits);
  V c[kVecs];
  for (int v = 0; v < kVecs; ++v) c[v] = L::load(acc + v * L::kWidth);
  for (int k0 = 0; k0 < k; k0 += kNvInstructionK) {
    V terms[kGroups][kVecs];
    int count = 0;
    for (int g0 = k0; g0 < std::min(k, k0 + kNvInstructionK); g0 += kNvGroup, ++count) {
      V sum[kVecs];
      for (int v = 0; v < kVecs; ++v) sum[v] = zero;
      for (int j = g0; j < std::min(k, g0 + kNvGroup); ++j) {  // e2m1 products: exact sums
        const V aj = L::set1(a[j]);
        for (int v = 0; v < kVecs; ++v)
          sum[v] = L::add(sum[v], L::mul(aj, L::load(b + j * ldb + v * L::kWidth)));
      }
      const V sa = L::set1(scale_a[g0 / kNvGroup]);
      const double* sb = scale_b + (g0 / kNvGroup) * ld_sb;
      for (int v = 0; v < kVecs; ++v)
        terms[count][v] = L::mul(L::mul(sum[v], sa), L::load(sb + v * L::kWidth));
    }
    for (int v = 0; v < kVecs; ++v) {
      // E over the nonzero finite terms and C (a non-finite lane is redone by the caller).
      V e = L::if_eq(c[v], zero, min_e, L::max(min_e, L::exponent(c[v])));
      e = L::if_lt(L::bits_and(c[v], ~(std::uint64_t{1} << 63)), inf, e, min_e);
      for (int g = 0; g < count; ++g)
        e = L::if_eq(terms[g][v], zero, e, L::max(e, L::exponent(terms[g][v])));
      const V up = L::pow2(L::sub(f, e));
      V sum = L::trunc(L::mul(c[v], up));
      for (int g = 0; g < count; ++g) sum = L::add(sum, L::trunc(L::mul(terms[g][v], up)));
      const V d = round_fp32_rz<23>(L::mul(sum, L::pow2(L::sub(e, f))));
      c[v] = L::if_eq(sum, zero, zero, d);
    }
  }
  for (int v = 0; v < kVecs; ++v) L::store(acc + v * L::kWidth, c[v]);
}

}  // namespace attndev::attention::detail::quant_lanes
