// The Dequant hook (rows/hooks.hpp) of the fp8 algorithms: e4m3 values times their block scales,
// applied where FA-3's kernels (and a scaled-fp8 GEMM's epilogue) apply them. ATTNDEV_HD and free
// of host containers, so the CPU paths (fp8_attention.cpp, the fast path) and the CUDA twins
// (lib/cuda/faithful_flash.cuh) run the same hook over the same scales.
#pragma once

#include "attention/fp8_quant.hpp"
#include "attention/rows/arith.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::detail {

// One (batch, head) of a prepared fp8 problem. Scales are fp32 values.
struct Fp8Dequant {
  // V's scale changes from one K/V block to the next, so each block's P V8 is formed apart and
  // scaled as it joins the accumulator (merge_pv).
  static constexpr bool kBlockLocalPv = true;
  fp8::ScaleView q, k, v;
  int b, h;

  // S_ij = dot8 * descale, descale = R_score_accum(scale_q(i) * scale_k(j0)): one per row and
  // K block (every key of a block shares its scale). Values are A's (double on the generic path,
  // float on the fast path: the scales are fp32 values, exact in either).
  template <class A>
  ATTNDEV_HD void scores(const A& a, int i, int j0, typename A::Value* s, int n) const {
    using T = typename A::Value;
    const T descale = a.mul(rows::Stage::score_accum, static_cast<T>(q.scale(b, h, i)),
                            static_cast<T>(k.scale(b, h, j0)));
    for (int j = 0; j < n; ++j) s[j] = a.mul(rows::Stage::score_accum, s[j], descale);
  }
  // acc * alpha + pv * scale_v(block), one fused step when the policy fuses.
  template <class A>
  ATTNDEV_HD typename A::Value merge_pv(const A& a, typename A::Value acc_times_alpha,
                                        typename A::Value pv, int j0) const {
    return a.mac(rows::Stage::out_accum, acc_times_alpha, pv,
                 static_cast<typename A::Value>(v.scale(b, h, j0)));
  }
  // baseline-fp8's output: sum_j P_ij V8_jt times V's one scale.
  template <class A>
  ATTNDEV_HD typename A::Value output(const A& a, typename A::Value acc) const {
    return a.mul(rows::Stage::out_accum, acc, static_cast<typename A::Value>(v.scale(b, h, 0)));
  }
};

}  // namespace attndev::attention::detail
