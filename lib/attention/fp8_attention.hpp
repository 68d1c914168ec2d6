// Internals of the fp8 algorithms (flash3-fp8 and its ablations, baseline-fp8): the prepared
// problem (scaled e4m3 Q, K, V) and the Dequant hook with which flash2's and baseline's row
// functions run on it (fp8_attention.cpp). Not part of the public API.
#pragma once

#include "attention/detail.hpp"
#include "attention/fp8_quant.hpp"
#include "attention/rows/arith.hpp"

namespace attndev::attention::detail {

// The fp8 view of a Problem: e4m3 values with their scales. q has Br-row blocks (flash3 with
// block quantization) or one scale per tensor; k and v likewise with Bc-row blocks.
struct Fp8Problem {
  const Problem* p = nullptr;  // policy, shape, tiles, scale; its q/k/v are the unquantized ones
  fp8::ScaledTensor q, k, v;
};

// Quantizes (and, for flash3 with incoherent processing, rotates) the problem's Q, K, V and runs
// the algorithm over row blocks on p.threads threads. Throws std::invalid_argument when the
// policy's input stage is itself an fp8 format (the inputs would be pre-rounded without a scale)
// or when incoherent processing meets a head_dim that is not a power of two.
// `kind` (fast_kind()) says whether the row functions run on the SIMD fast path (fast.cpp,
// run_fp8_fast) or the generic one; the preparation is the same either way.
void run_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options, FastKind kind,
             Output& out);

Fp8Problem prepare_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options);

struct Fp8Dequant;
// The row functions of a prepared fp8 problem on the fast path (fast.cpp).
void run_fp8_fast(Algorithm algorithm, const Fp8Problem& f, FastKind kind, Output& out);

// The Dequant hook (rows/hooks.hpp) of one (batch, head): e4m3 values times their block scales,
// applied where FA-3's kernels (and a scaled-fp8 GEMM's epilogue) apply them. Scales are fp32.
struct Fp8Dequant {
  // V's scale changes from one K/V block to the next, so each block's P V8 is formed apart and
  // scaled as it joins the accumulator (merge_pv).
  static constexpr bool kBlockLocalPv = true;
  const fp8::ScaledTensor* q;
  const fp8::ScaledTensor* k;
  const fp8::ScaledTensor* v;
  int b, h;

  // S_ij = dot8 * descale, descale = R_score_accum(scale_q(i) * scale_k(j0)): one per row and
  // K block (every key of a block shares its scale). Values are A's (double on the generic path,
  // float on the fast path: the scales are fp32 values, exact in either).
  template <class A>
  void scores(const A& a, int i, int j0, typename A::Value* s, int n) const {
    using T = typename A::Value;
    const T descale = a.mul(rows::Stage::score_accum, static_cast<T>(q->scale(b, h, i)),
                            static_cast<T>(k->scale(b, h, j0)));
    for (int j = 0; j < n; ++j) s[j] = a.mul(rows::Stage::score_accum, s[j], descale);
  }
  // acc * alpha + pv * scale_v(block), one fused step when the policy fuses.
  template <class A>
  typename A::Value merge_pv(const A& a, typename A::Value acc_times_alpha, typename A::Value pv,
                             int j0) const {
    return a.mac(rows::Stage::out_accum, acc_times_alpha, pv,
                 static_cast<typename A::Value>(v->scale(b, h, j0)));
  }
  // baseline-fp8's output: sum_j P_ij V8_jt times V's one scale.
  template <class A>
  typename A::Value output(const A& a, typename A::Value acc) const {
    return a.mul(rows::Stage::out_accum, acc, static_cast<typename A::Value>(v->scale(b, h, 0)));
  }
};

}  // namespace attndev::attention::detail
