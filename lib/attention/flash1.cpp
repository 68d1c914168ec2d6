// flash1: FlashAttention-1's forward, Algorithm 1 of Dao et al. (2022), the generic path.
//
// FA-1 keeps O, l and m in HBM and writes them back after every K/V block: O is stored in the
// output format (and normalized) every step, l and m in the stats format. Per query row i and K/V
// block (masked keys are not visited; a row that sees no key of a block is untouched by it):
//   S_ij  = R_score(mul_in(score_accum, dot(q_i, k_j), scale))
//   mt    = max_j S_ij;   if mt == -inf: skip (the row has nothing new; no -inf - -inf)
//   pt_ij = exp_in(stats, sub_in(stats, S_ij, mt));   lt = sum_j pt_ij, sequential add_in(stats)
//   m_new = max(m_i, mt)
//   f_old = m_i == -inf ? 0 : exp_in(stats, sub_in(stats, m_i, m_new))
//   f_new = exp_in(stats, sub_in(stats, mt, m_new))
//   l_new = add_in(stats, mul_in(stats, f_old, l_i), mul_in(stats, f_new, lt))
//   pv_t  = sum_j R_prob(pt_ij) V_jt, sequential mac_in(out_accum)
//   num_t = add_in(out_accum, mul_in(out_accum, mul_in(stats, l_i, f_old), O_it),
//                             mul_in(out_accum, f_new, pv_t))
//   O_it  = R_output(div_in(out_accum, num_t, l_new))      the HBM round trip of O
//   m_i   = R_stats(m_new);   l_i = R_stats(l_new)          the HBM round trip of m and l
// At the end lse_i = m_i + log(l_i) (S already includes the scale); a row that saw nothing keeps
// O = 0 and gets lse = -inf.
//
// FA-1's loop nest is K/V blocks outer, Q blocks inner. Rows never interact, so running each Q
// block through all K/V blocks in increasing order (what the work items here do) performs exactly
// the same operations on each row in the same order: the results are the same bits.
#include <cmath>
#include <limits>
#include <vector>

#include "attention/detail.hpp"
#include "numerics/arith.hpp"
#include "numerics/math.hpp"

namespace attndev::attention::detail {

using numerics::Stage;

void flash1_generic(const Problem& p, const RowBlock& rb, Output& out) {
  const numerics::PrecisionPolicy& pol = p.policy;
  const numerics::Format st = pol.stats, oa = pol.out_accum, sa = pol.score_accum;
  const int d = p.shape.head_dim, n_q = p.shape.seq_q, n_kv = p.shape.seq_kv;
  const bool fused = pol.fma;
  const double scale = p.score_scale();
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const double* q = p.q.head_ptr(rb.b, rb.h);  // (N_q, d)
  const double* k = p.k.head_ptr(rb.b, rb.h);  // (N_kv, d)
  const double* v = p.v.head_ptr(rb.b, rb.h);  // (N_kv, d)
  double* o = out.o.head_ptr(rb.b, rb.h);      // (N_q, d), the "HBM" O between K/V blocks
  double* lse = out.lse.data() + (static_cast<std::size_t>(rb.b) * p.shape.heads + rb.h) * n_q;

  const int rows = rb.row_end - rb.row_begin;
  std::vector<double> m(static_cast<std::size_t>(rows), neg_inf);  // (Br) in stats format
  std::vector<double> l(static_cast<std::size_t>(rows), 0.0);      // (Br) in stats format
  std::vector<double> s(static_cast<std::size_t>(p.block_c));      // (Bc) S row, then pt
  std::vector<double> pv(static_cast<std::size_t>(d));             // (d)
  for (int i = rb.row_begin; i < rb.row_end; ++i)
    for (int t = 0; t < d; ++t) o[static_cast<std::size_t>(i) * d + t] = 0.0;

  const int last_vis = visible_count(rb.row_end - 1, n_q, n_kv, p.causal);
  for (int j0 = 0; j0 < last_vis; j0 += p.block_c) {
    const int j1 = std::min(n_kv, j0 + p.block_c);
    for (int r = 0; r < rows; ++r) {
      const int i = rb.row_begin + r;
      const int j_end = std::min(j1, visible_count(i, n_q, n_kv, p.causal));
      if (j_end <= j0) continue;
      const double* q_i = q + static_cast<std::size_t>(i) * d;
      double mt = neg_inf;
      for (int j = j0; j < j_end; ++j) {
        const double* k_j = k + static_cast<std::size_t>(j) * d;
        double dot = 0.0;
        for (int t = 0; t < d; ++t) dot = numerics::mac_in(sa, fused, dot, q_i[t], k_j[t]);
        const double scaled = p.scale_in_query ? dot : numerics::mul_in(sa, dot, scale);
        s[j - j0] = pol.round(Stage::score, scaled);
        mt = std::max(mt, s[j - j0]);
      }
      if (mt == neg_inf) continue;  // nothing visible is finite: -inf - -inf would be NaN
      double lt = 0.0;
      for (int j = j0; j < j_end; ++j) {
        s[j - j0] = numerics::exp_in(st, numerics::sub_in(st, s[j - j0], mt));  // pt_ij
        lt = numerics::add_in(st, lt, s[j - j0]);
      }
      const double m_new = std::max(m[r], mt);
      const double f_old =
          m[r] == neg_inf ? 0.0 : numerics::exp_in(st, numerics::sub_in(st, m[r], m_new));
      const double f_new = numerics::exp_in(st, numerics::sub_in(st, mt, m_new));
      const double l_new =
          numerics::add_in(st, numerics::mul_in(st, f_old, l[r]), numerics::mul_in(st, f_new, lt));

      for (int t = 0; t < d; ++t) pv[t] = 0.0;
      for (int j = j0; j < j_end; ++j) {
        const double prob = pol.round(Stage::prob, s[j - j0]);
        const double* v_j = v + static_cast<std::size_t>(j) * d;
        for (int t = 0; t < d; ++t) pv[t] = numerics::mac_in(oa, fused, pv[t], prob, v_j[t]);
      }
      const double c_old = numerics::mul_in(st, l[r], f_old);
      double* o_i = o + static_cast<std::size_t>(i) * d;
      for (int t = 0; t < d; ++t) {
        const double num = numerics::add_in(oa, numerics::mul_in(oa, c_old, o_i[t]),
                                            numerics::mul_in(oa, f_new, pv[t]));
        o_i[t] = pol.round(Stage::output, numerics::div_in(oa, num, l_new));
      }
      m[r] = pol.round(Stage::stats, m_new);
      l[r] = pol.round(Stage::stats, l_new);
    }
  }
  for (int r = 0; r < rows; ++r)
    lse[rb.row_begin + r] = l[r] == 0.0 ? neg_inf : m[r] + std::log(l[r]);
}

}  // namespace attndev::attention::detail
