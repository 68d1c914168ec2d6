// flash2: FlashAttention-2's forward (Dao, 2023), the generic path.
//
// Outer loop over Q blocks of Br rows (one work item each), inner loop over K/V blocks of Bc rows
// in increasing order. Per query row, with scale_log2 = R_stats(scale * log2(e)) (FA-2 folds
// log2(e) into the softmax scale and calls exp2):
//   m = -inf, l = 0, acc[t] = 0
//   for each K/V block with at least one visible key for the row (masked keys are not visited):
//     S_ij  = R_score(dot(q_i, k_j))              raw scores, unscaled, accumulated in score_accum
//     m_new = max(m, max_j S_ij)
//     if m_new == -inf: nothing seen yet, skip    (never evaluate -inf - -inf)
//     max_scaled = mul_in(stats, m_new, scale_log2)
//     alpha = m == -inf ? 0 : exp2_in(stats, mul_in(stats, sub_in(stats, m, m_new), scale_log2))
//     p_ij  = exp2_in(stats, fma ? fma_in(stats, S_ij, scale_log2, -max_scaled)
//                                : sub_in(stats, mul_in(stats, S_ij, scale_log2), max_scaled))
//     l = mul_in(stats, l, alpha); then l = add_in(stats, l, p_ij) over j in order
//                                  (FA-2 sums the fp32 p, before P is cast)
//     acc[t] = mul_in(out_accum, acc[t], alpha)
//     P_ij = R_prob(p_ij)                          the cast before the second mma
//     acc[t] = mac_in(out_accum, fma, acc[t], P_ij, V_jt) over j in order
//     m = m_new
//   end: l == 0 -> O = 0, lse = -inf; else inv_l = div_in(stats, 1, l),
//        O_it = R_output(mul_in(out_accum, acc[t], inv_l)), lse = m * scale + log(l) (double).
// Under ScalePlacement::query the scale is already in Q: scale := 1 (scale_log2 = R(log2 e)).
//
// A row that sees no key of a block is left untouched by that block. The kernel instead runs the
// block with masked scores -inf, which leaves m unchanged and rescales by alpha = exp2(0) = 1: the
// same values, since exp2_in(stats, 0) == 1 exactly (checked in the tests).
#include <cmath>
#include <limits>
#include <vector>

#include "attention/detail.hpp"
#include "numerics/arith.hpp"
#include "numerics/math.hpp"

namespace attndev::attention::detail {

using numerics::Stage;

// log2(e) to double precision; the product with the scale is taken in double, then rounded once
// to the stats format (the kernel's host code does softmax_scale * M_LOG2E, then a float cast).
inline constexpr double kLog2e = 1.4426950408889634074;

double flash2_scale_log2(const Problem& p) {
  const double scale = p.scale_in_query ? 1.0 : p.scale;
  return p.policy.round(Stage::stats, scale * kLog2e);
}

void flash2_generic(const Problem& p, const RowBlock& rb, Output& out) {
  const numerics::PrecisionPolicy& pol = p.policy;
  const numerics::Format st = pol.stats, oa = pol.out_accum, sa = pol.score_accum;
  const int d = p.shape.head_dim, n_q = p.shape.seq_q, n_kv = p.shape.seq_kv;
  const bool fused = pol.fma;
  const double scale_log2 = flash2_scale_log2(p);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const double* q = p.q.head_ptr(rb.b, rb.h);  // (N_q, d)
  const double* k = p.k.head_ptr(rb.b, rb.h);  // (N_kv, d)
  const double* v = p.v.head_ptr(rb.b, rb.h);  // (N_kv, d)
  double* o = out.o.head_ptr(rb.b, rb.h);      // (N_q, d)
  double* lse = out.lse.data() + (static_cast<std::size_t>(rb.b) * p.shape.heads + rb.h) * n_q;

  const int rows = rb.row_end - rb.row_begin;
  std::vector<double> m(static_cast<std::size_t>(rows), neg_inf);    // (Br) running max, raw score
  std::vector<double> l(static_cast<std::size_t>(rows), 0.0);        // (Br) running sum
  std::vector<double> acc(static_cast<std::size_t>(rows) * d, 0.0);  // (Br, d) unnormalized O
  std::vector<double> s(static_cast<std::size_t>(p.block_c));        // (Bc) one row of S, then p

  const int last_vis = visible_count(rb.row_end - 1, n_q, n_kv, p.causal);
  for (int j0 = 0; j0 < last_vis; j0 += p.block_c) {
    const int j1 = std::min(n_kv, j0 + p.block_c);
    for (int r = 0; r < rows; ++r) {
      const int i = rb.row_begin + r;
      const int j_end = std::min(j1, visible_count(i, n_q, n_kv, p.causal));
      if (j_end <= j0) continue;
      const double* q_i = q + static_cast<std::size_t>(i) * d;
      double row_max = neg_inf;
      for (int j = j0; j < j_end; ++j) {
        const double* k_j = k + static_cast<std::size_t>(j) * d;
        double dot = 0.0;
        for (int t = 0; t < d; ++t) dot = numerics::mac_in(sa, fused, dot, q_i[t], k_j[t]);
        s[j - j0] = pol.round(Stage::score, dot);
        row_max = std::max(row_max, s[j - j0]);
      }
      const double m_new = std::max(m[r], row_max);
      if (m_new == neg_inf) continue;  // every score so far is -inf: -inf - -inf would be NaN
      const double max_scaled = numerics::mul_in(st, m_new, scale_log2);
      const double alpha =
          m[r] == neg_inf
              ? 0.0
              : numerics::exp2_in(
                    st, numerics::mul_in(st, numerics::sub_in(st, m[r], m_new), scale_log2));
      for (int j = j0; j < j_end; ++j) {
        const double x = s[j - j0];
        const double arg =
            fused ? numerics::fma_in(st, x, scale_log2, -max_scaled)
                  : numerics::sub_in(st, numerics::mul_in(st, x, scale_log2), max_scaled);
        s[j - j0] = numerics::exp2_in(st, arg);  // p_ij, still in the stats format
      }
      l[r] = numerics::mul_in(st, l[r], alpha);
      for (int j = j0; j < j_end; ++j) l[r] = numerics::add_in(st, l[r], s[j - j0]);
      double* acc_r = acc.data() + static_cast<std::size_t>(r) * d;
      for (int t = 0; t < d; ++t) acc_r[t] = numerics::mul_in(oa, acc_r[t], alpha);
      for (int j = j0; j < j_end; ++j) {
        const double prob = pol.round(Stage::prob, s[j - j0]);
        const double* v_j = v + static_cast<std::size_t>(j) * d;
        for (int t = 0; t < d; ++t) acc_r[t] = numerics::mac_in(oa, fused, acc_r[t], prob, v_j[t]);
      }
      m[r] = m_new;
    }
  }

  const double lse_scale = p.scale_in_query ? 1.0 : p.scale;
  for (int r = 0; r < rows; ++r) {
    const int i = rb.row_begin + r;
    double* o_i = o + static_cast<std::size_t>(i) * d;
    if (l[r] == 0.0) {
      for (int t = 0; t < d; ++t) o_i[t] = 0.0;
      lse[i] = neg_inf;
      continue;
    }
    const double inv_l = numerics::div_in(st, 1.0, l[r]);
    const double* acc_r = acc.data() + static_cast<std::size_t>(r) * d;
    for (int t = 0; t < d; ++t)
      o_i[t] = pol.round(Stage::output, numerics::mul_in(oa, acc_r[t], inv_l));
    lse[i] = m[r] * lse_scale + std::log(l[r]);
  }
}

}  // namespace attndev::attention::detail
