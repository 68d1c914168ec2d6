// baseline: attention with S and P materialized, as a framework computes it (and, under the fp64
// policy, the golden: docs/CONTRIBUTING.md #2, the golden is this code at another precision), for a
// block of query rows of one (batch, head). The one definition of the CPU generic path, the SIMD
// fast path and baseline-fp8 (through the Dequant hook). The cuBLAS baseline on the GPU runs the
// same RowSoftmax steps between its two GEMMs (lib/cuda/baseline_softmax.cuh).
//
// Per query row i, over its visible keys j (masked keys are not visited):
//   S_ij = R_score(mul_in(score_accum, dequant(dot(q_i, k_j)), scale_c))   (no multiply when
//                                                                           the scale is in Q)
//   RowSoftmax: m_i = max_j S_ij; e_ij = exp(S_ij - m_i); l_i = sum_j e_ij; P_ij = R_prob(e_ij/l_i)
//   O_it = R_output(dequant(sum_j P_ij V_jt)), sequential in out_accum
// Under the framework model this is `softmax(q @ k^T * scale) @ v` on framework tensors
// (torch_attention.py's explicit): each matmul accumulates in fp32 and its output is stored,
// S * scale is an op of its own, and softmax is one op (fp32 inside, only P stored).
//   lse_i = m_i + log(l_i) in double (reporting only)
// A row none of whose visible scores is above -inf (no visible key, or all -inf) is O = 0,
// lse = -inf (rows/softmax.hpp). A row whose scores overflowed to +inf is *not* guarded: that is
// a real failure of the policy and shows as NaN in the metrics, as it would in the framework.
#pragma once

#include "attention/rows/arith.hpp"
#include "attention/rows/hooks.hpp"
#include "attention/rows/mask.hpp"
#include "attention/rows/mask_hook.hpp"
#include "attention/rows/params.hpp"
#include "attention/rows/softmax.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

// Scratch of one call, owned by the caller. `rows` = row_end - row_begin.
template <class A>
struct BaselineWork {
  using T = typename A::Value;
  RowSoftmax<A>* softmax;  // (rows)
  int* count;              // (rows) visible keys of each row (0 for a row defined as O = 0)
  T* s;                    // (rows, ld_s >= N_kv) S, then e, then P
  int ld_s;
  T* acc;  // (rows, ld_acc >= d) the P V accumulators
  int ld_acc;
};

// A (dequantized) dot product times the scale, in score_accum: S before its rounding to the
// score format. No multiply when the scale was folded into Q. Under the framework model the
// matmul's output is stored first and `S * scale` is its own op (fp32, then stored).
template <class A>
ATTNDEV_HD inline typename A::Value scale_score(const A& a, const Params& p,
                                                typename A::Value dot) {
  using T = typename A::Value;
  dot = a.store(Stage::score_accum, dot);
  return p.scale_scores ? a.mul(Stage::score_accum, dot, static_cast<T>(p.score_scale)) : dot;
}

// The scores of one row as stored: s[0..n) raw dot products on entry, R_score(...) on exit.
template <class A, class Dequant, class Mask = NoMask>
ATTNDEV_HD inline void baseline_scores(const A& a, const Dequant& dequant, const Params& p, int i,
                                       typename A::Value* s, int n, const Mask& mask = Mask{}) {
  dequant.scores(a, i, /*j0=*/0, s, n);
  for (int j = 0; j < n; ++j) s[j] = scale_score(a, p, s[j]);
  mask.scores(a, p, /*raw=*/false, i, /*j0=*/0, s, n);
  a.round_all(Stage::score, s, n);
}

// Rows [row_begin, row_end) of one (batch, head): writes o (rows, d) and lse (rows).
template <class A, class Kernels, class Dequant, class Mask = NoMask>
ATTNDEV_HD void baseline_rows(const A& a, const Kernels& kern, const Dequant& dequant,
                              const Params& p, int row_begin, int row_end, BaselineWork<A> w,
                              double* o, double* lse, const Mask& mask = Mask{}) {
  using T = typename A::Value;
  const int rows = row_end - row_begin, d = p.head_dim;
  for (int r = 0; r < rows; ++r) {
    w.count[r] = mask.keys(row_begin + r, /*j0=*/0,
                           visible_count(row_begin + r, p.seq_q, p.seq_kv, p.causal));
    w.softmax[r] = RowSoftmax<A>{};
  }
  kern.scores(a, row_begin, rows, /*j0=*/0, w.count, w.s, w.ld_s);
  for (int r = 0; r < rows; ++r) {
    const int n = w.count[r];
    if (n == 0) continue;
    T* s = w.s + static_cast<long>(r) * w.ld_s;  // (n)
    baseline_scores(a, dequant, p, row_begin + r, s, n, mask);
    if (!softmax_row(a, w.softmax[r], s, n)) w.count[r] = 0;
  }
  for (long e = 0; e < static_cast<long>(rows) * w.ld_acc; ++e) w.acc[e] = T(0);
  kern.pv(a, w.s, w.ld_s, w.count, rows, /*j0=*/0, w.acc, w.ld_acc);
  a.store_all(Stage::out_accum, w.acc, rows * w.ld_acc);  // P V as its matmul stores it

  for (int r = 0; r < rows; ++r) {
    double* o_r = o + static_cast<long>(r) * d;
    if (w.count[r] == 0) {
      for (int t = 0; t < d; ++t) o_r[t] = 0.0;
      lse[r] = neg_inf<double>();
      continue;
    }
    T* acc_r = w.acc + static_cast<long>(r) * w.ld_acc;
    for (int t = 0; t < d; ++t) acc_r[t] = dequant.output(a, acc_r[t]);
    a.round_all(Stage::output, acc_r, d);
    for (int t = 0; t < d; ++t) o_r[t] = static_cast<double>(acc_r[t]);
    lse[r] = w.softmax[r].lse();
  }
}

// Query row i of baseline_rows, streamed: the same operations on the same values in the same
// order, for a caller with no room for the row's N_kv scores (a GPU thread per row at N = 131072;
// the FP64 golden on the device is this function under the fp64 policy). Each score is recomputed
// where it is needed, in three passes over the visible keys (the max; e_j and the row sum; P_j
// and its share of every P V sum), by the same dot product, dequantization, scaling and rounding
// each time, so the same bits; every P V sum still runs over j in increasing order for each t.
// The price is the dot products done three times instead of once. acc (d) is the caller's,
// Value-typed (it may be o itself when Value is double).
template <class A, class Kernels, class Dequant>
ATTNDEV_HD void baseline_row_streamed(const A& a, const Kernels& kern, const Dequant& dequant,
                                      const Params& p, int i, typename A::Value* acc, double* o,
                                      double* lse) {
  using T = typename A::Value;
  const int d = p.head_dim;
  const int n = visible_count(i, p.seq_q, p.seq_kv, p.causal);
  const int one = 1;
  auto score = [&](int j) {  // S_ij as stored: baseline_scores on a row of one key
    T s;
    kern.scores(a, i, /*rows=*/1, /*j0=*/j, &one, &s, /*ld_s=*/1);
    baseline_scores(a, dequant, p, i, &s, 1);
    return s;
  };
  RowSoftmax<A> sm;
  for (int j = 0; j < n; ++j) sm.take_max(score(j));
  if (!sm.has_max()) {  // the guard: no visible score above -inf, O = 0 and lse = -inf
    for (int t = 0; t < d; ++t) o[t] = 0.0;
    *lse = neg_inf<double>();
    return;
  }
  for (int j = 0; j < n; ++j) sm.add_term(a, sm.exp(a, score(j)));  // accumulate, term by term
  sm.end_sum(a);
  for (int t = 0; t < d; ++t) acc[t] = T(0);
  for (int j = 0; j < n; ++j) {
    T prob = sm.normalize(a, sm.exp(a, score(j)));
    a.round_all(Stage::prob, &prob, 1);  // P as stored
    kern.pv(a, &prob, /*ld_p=*/1, &one, /*rows=*/1, /*j0=*/j, acc, /*ld_acc=*/d);
  }
  a.store_all(Stage::out_accum, acc, d);  // P V as its matmul stores it
  for (int t = 0; t < d; ++t) acc[t] = dequant.output(a, acc[t]);
  a.round_all(Stage::output, acc, d);
  for (int t = 0; t < d; ++t) o[t] = static_cast<double>(acc[t]);
  *lse = sm.lse();
}

}  // namespace attndev::attention::rows
