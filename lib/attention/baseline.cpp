// baseline: attention with S and P materialized, as a framework computes it (and, under the fp64
// policy, the golden: STYLE.md #2, the golden is this code at another precision).
//
// Per query row i (masked keys j are not visited at all; see visible_count):
//   S_ij = R_score(mul_in(score_accum, dot(q_i, k_j), scale))   dot: sequential fma/mac over t
//   m_i  = max_j S_ij                                            exact in any format
//   e_ij = exp_in(stats, sub_in(stats, S_ij, m_i))
//   l_i  = sum_j e_ij, sequential add_in(stats)
//   P_ij = R_prob(div_in(stats, e_ij, l_i))                      softmax output as stored
//   O_it = R_output(sum_j P_ij V_jt, sequential mac_in(out_accum))
//   lse_i = m_i + log(l_i) in double (reporting only)
// A row with no visible key (causal, N_q > N_kv) is O = 0, lse = -inf, never NaN. A row whose
// scores overflowed to +-inf is *not* guarded: that is a real failure of the policy and shows as
// NaN/inf in the metrics, as it would in the framework.
#include <cmath>
#include <limits>
#include <vector>

#include "attention/detail.hpp"
#include "numerics/arith.hpp"
#include "numerics/math.hpp"

namespace attndev::attention::detail {

using numerics::Stage;

void baseline_generic(const Problem& p, const RowBlock& rb, Output& out) {
  const numerics::PrecisionPolicy& pol = p.policy;
  const int d = p.shape.head_dim, n_q = p.shape.seq_q, n_kv = p.shape.seq_kv;
  const bool fused = pol.fma;
  const double scale = p.score_scale();
  const double* q = p.q.head_ptr(rb.b, rb.h);  // (N_q, d)
  const double* k = p.k.head_ptr(rb.b, rb.h);  // (N_kv, d)
  const double* v = p.v.head_ptr(rb.b, rb.h);  // (N_kv, d)
  double* o = out.o.head_ptr(rb.b, rb.h);      // (N_q, d)
  double* lse = out.lse.data() + (static_cast<std::size_t>(rb.b) * p.shape.heads + rb.h) * n_q;

  std::vector<double> s(static_cast<std::size_t>(n_kv));  // (N_kv) one row of S, then of P
  std::vector<double> e(static_cast<std::size_t>(n_kv));
  for (int i = rb.row_begin; i < rb.row_end; ++i) {
    const int n_vis = visible_count(i, n_q, n_kv, p.causal);
    double* o_i = o + static_cast<std::size_t>(i) * d;
    if (n_vis == 0) {
      for (int t = 0; t < d; ++t) o_i[t] = 0.0;
      lse[i] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const double* q_i = q + static_cast<std::size_t>(i) * d;
    double m = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < n_vis; ++j) {
      const double* k_j = k + static_cast<std::size_t>(j) * d;
      double acc = 0.0;
      for (int t = 0; t < d; ++t)
        acc = numerics::mac_in(pol.score_accum, fused, acc, q_i[t], k_j[t]);
      const double scaled = p.scale_in_query ? acc : numerics::mul_in(pol.score_accum, acc, scale);
      s[j] = pol.round(Stage::score, scaled);
      m = std::max(m, s[j]);
    }
    double l = 0.0;
    for (int j = 0; j < n_vis; ++j) {
      e[j] = numerics::exp_in(pol.stats, numerics::sub_in(pol.stats, s[j], m));
      l = numerics::add_in(pol.stats, l, e[j]);
    }
    for (int j = 0; j < n_vis; ++j)
      s[j] = pol.round(Stage::prob, numerics::div_in(pol.stats, e[j], l));
    for (int t = 0; t < d; ++t) {
      double acc = 0.0;
      for (int j = 0; j < n_vis; ++j)
        acc = numerics::mac_in(pol.out_accum, fused, acc, s[j],
                               v[static_cast<std::size_t>(j) * d + t]);
      o_i[t] = pol.round(Stage::output, acc);
    }
    lse[i] = m + std::log(l);
  }
}

}  // namespace attndev::attention::detail
