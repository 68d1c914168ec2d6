// Baseline and FA-2-style attention backward under a precision policy (see backward.hpp for the
// stage of every intermediate).
#include "attention/backward.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/detail.hpp"
#include "attention/rows/arith.hpp"
#include "attention/rows/mask.hpp"
#include "attention/rows/softmax.hpp"
#include "numerics/arith.hpp"
#include "numerics/math.hpp"

namespace attndev::attention {
namespace {

using numerics::Format;
using numerics::PrecisionPolicy;
using numerics::Stage;

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  if (a.batch != b.batch || a.heads != b.heads || a.rows != b.rows || a.cols != b.cols)
    throw std::invalid_argument(std::string("attention backward: ") + what + " has shape (" +
                                std::to_string(a.batch) + "," + std::to_string(a.heads) + "," +
                                std::to_string(a.rows) + "," + std::to_string(a.cols) +
                                "), expected (" + std::to_string(b.batch) + "," +
                                std::to_string(b.heads) + "," + std::to_string(b.rows) + "," +
                                std::to_string(b.cols) + ")");
}

void validate(Algorithm algorithm, const PrecisionPolicy& policy, const Inputs& in,
              const Output& fwd, const Tensor& d_out, const Options& options) {
  if (options.mask)
    throw std::invalid_argument(
        "attention backward: masks beyond the causal one are modelled in the forward pass only");
  if (algorithm == Algorithm::flash1)
    throw std::invalid_argument(
        "attention backward: flash1 has no backward; use baseline or flash2");
  // The backward rounds at the policy's stages the way the kernel model does (backward.hpp). Run
  // under a framework-model policy it would recompute a P the framework forward never produced
  // (its S, softmax and P are each one stored tensor op): refused, not silently mixed.
  if (policy.model == numerics::Model::framework)
    throw std::invalid_argument(
        "attention backward: the policy uses the framework rounding model, which the backward "
        "does not model (it rounds as the kernel model does); use a kernel-model policy "
        "(kernel-bf16, torch-math-bf16, fp32, ...)");
  const Shape s = in.shape();
  if (s.head_dim < 1 || s.seq_q < 1 || s.seq_kv < 1 || s.batch < 1 || s.heads < 1)
    throw std::invalid_argument("attention backward: empty inputs (B, H, N and d must be >= 1)");
  if (in.k.batch != s.batch || in.k.heads != s.heads || in.k.cols != s.head_dim)
    throw std::invalid_argument("attention backward: k does not match q in batch, heads or d");
  check_same_shape(in.v, in.k, "v");
  check_same_shape(fwd.o, in.q, "forward.o");
  check_same_shape(d_out, in.q, "d_out");
  if (algorithm == Algorithm::flash2) {
    if (fwd.lse.size() != static_cast<std::size_t>(s.batch) * s.heads * s.seq_q)
      throw std::invalid_argument(
          "attention backward: flash2 needs the forward's lse of (B, H, N_q) values");
    if (options.block_r < 1 || options.block_c < 1)
      throw std::invalid_argument("attention backward: block_r and block_c must be >= 1");
  }
}

// One (batch, head) slice: row-major matrices of `cols` columns.
struct HeadIn {
  std::vector<double> q, k, v, d_out, o;  // q: (N_q, d) with scale folded in when placed there
  std::vector<double> lse;                // (N_q)
};

struct HeadGrad {
  std::vector<double> dq, dk, dv;
};

// Inputs and dO as the kernel reads them: rounded to the input format (idempotent for values the
// caller already rounded). With ScalePlacement::query, Q' = round_input(Q * scale) as in the
// forward.
HeadIn load_head(const PrecisionPolicy& pol, const Inputs& in, const Output& fwd,
                 const Tensor& d_out, const Options& options, double scale, int b, int h) {
  const Shape s = in.shape();
  const std::size_t nq = static_cast<std::size_t>(s.seq_q) * s.head_dim;
  const std::size_t nk = static_cast<std::size_t>(s.seq_kv) * s.head_dim;
  HeadIn r;
  r.q.assign(in.q.head_ptr(b, h), in.q.head_ptr(b, h) + nq);
  r.k.assign(in.k.head_ptr(b, h), in.k.head_ptr(b, h) + nk);
  r.v.assign(in.v.head_ptr(b, h), in.v.head_ptr(b, h) + nk);
  r.d_out.assign(d_out.head_ptr(b, h), d_out.head_ptr(b, h) + nq);
  r.o.assign(fwd.o.head_ptr(b, h), fwd.o.head_ptr(b, h) + nq);
  for (double& x : r.q) x = pol.round(Stage::input, x);
  if (options.scale_placement == ScalePlacement::query)
    for (double& x : r.q) x = pol.round(Stage::input, x * scale);  // as the forward folds it
  for (double& x : r.k) x = pol.round(Stage::input, x);
  for (double& x : r.v) x = pol.round(Stage::input, x);
  for (double& x : r.d_out) x = pol.round(Stage::input, x);
  if (!fwd.lse.empty()) {
    const std::size_t base = (static_cast<std::size_t>(b) * s.heads + h) * s.seq_q;
    r.lse.assign(fwd.lse.begin() + base, fwd.lse.begin() + base + s.seq_q);
  }
  return r;
}

// Dot product of two d-vectors accumulated sequentially in format f.
double dot_in(const PrecisionPolicy& pol, Format f, const double* a, const double* b, int d) {
  double acc = 0.0;
  for (int t = 0; t < d; ++t) acc = numerics::mac_in(f, pol.fma, acc, a[t], b[t]);
  return acc;
}

// acc[0..d) += w * x[0..d) in format f.
void axpy_in(const PrecisionPolicy& pol, Format f, double* acc, double w, const double* x, int d) {
  for (int t = 0; t < d; ++t) acc[t] = numerics::mac_in(f, pol.fma, acc[t], w, x[t]);
}

// Final scaling in the accumulator format, then the store.
void store(const PrecisionPolicy& pol, const std::vector<double>& acc, double scale,
           std::vector<double>& out) {
  out.resize(acc.size());
  for (std::size_t t = 0; t < acc.size(); ++t) {
    const double x = scale == 1.0 ? acc[t] : numerics::mul_in(pol.out_accum, acc[t], scale);
    out[t] = pol.round(Stage::output, x);
  }
}

// Score S_ij as the forward forms it (lib/attention/rows/baseline.hpp, flash2.hpp): the dot product
// accumulated in score_accum; baseline multiplies by the scale (rounded to score_accum) in
// score_accum before storing S, flash2 keeps the raw score and folds the scale into exp2.
double raw_score(const PrecisionPolicy& pol, const HeadIn& x, int i, int j, int d) {
  return pol.round(Stage::score, dot_in(pol, pol.score_accum, &x.q[std::size_t(i) * d],
                                        &x.k[std::size_t(j) * d], d));
}
double scaled_score(const PrecisionPolicy& pol, const HeadIn& x, int i, int j, int d,
                    double score_scale) {
  const double acc =
      dot_in(pol, pol.score_accum, &x.q[std::size_t(i) * d], &x.k[std::size_t(j) * d], d);
  if (score_scale == 1.0) return pol.round(Stage::score, acc);
  return pol.round(
      Stage::score,
      numerics::mul_in(pol.score_accum, acc, numerics::round_to(pol.score_accum, score_scale)));
}

HeadGrad baseline_head(const PrecisionPolicy& pol, const HeadIn& x, const Shape& s, bool causal,
                       double score_scale, double grad_scale) {
  const int nq = s.seq_q, nk = s.seq_kv, d = s.head_dim;
  // P: (N_q, N_kv), as the baseline forward stores it: the forward's own softmax
  // (rows::softmax_row) over the keys the row sees, a prefix of the row (rows/mask.hpp); masked
  // keys keep P = 0. validate() admits only the kernel model, under which that is the whole
  // recipe (the framework model would also change how S is formed).
  std::vector<double> p(std::size_t(nq) * nk, 0.0);
  const rows::PolicyArith arith{pol};
  for (int i = 0; i < nq; ++i) {
    double* row = &p[std::size_t(i) * nk];
    const int seen = rows::visible_count(i, nq, nk, causal);
    for (int j = 0; j < seen; ++j) row[j] = scaled_score(pol, x, i, j, d, score_scale);
    rows::RowSoftmax<rows::PolicyArith> softmax;
    // A row without a usable score: P = 0, no gradient flows (its forward output is 0).
    if (!rows::softmax_row(arith, softmax, row, seen)) std::fill(row, row + seen, 0.0);
  }

  HeadGrad g;
  // dV = P^T dO, accumulated over query rows in order.  (N_kv, d)
  std::vector<double> dv_acc(std::size_t(nk) * d, 0.0);
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < nk; ++j)
      if (p[std::size_t(i) * nk + j] != 0.0)
        axpy_in(pol, pol.out_accum, &dv_acc[std::size_t(j) * d], p[std::size_t(i) * nk + j],
                &x.d_out[std::size_t(i) * d], d);

  // dS = P * (dP - rowsum(P * dP)), dP = dO V^T.  (N_q, N_kv)
  std::vector<double> ds(std::size_t(nq) * nk, 0.0);
  std::vector<double> dp(nk);
  for (int i = 0; i < nq; ++i) {
    const double* prow = &p[std::size_t(i) * nk];
    double delta = 0.0;
    for (int j = 0; j < nk; ++j) {
      if (causal && !causal_visible(i, j, nq, nk)) continue;
      dp[j] = pol.round(Stage::score, dot_in(pol, pol.score_accum, &x.d_out[std::size_t(i) * d],
                                             &x.v[std::size_t(j) * d], d));
      delta = numerics::mac_in(pol.stats, pol.fma, delta, prow[j], dp[j]);
    }
    for (int j = 0; j < nk; ++j) {
      if (causal && !causal_visible(i, j, nq, nk)) continue;
      const double diff = numerics::sub_in(pol.stats, dp[j], delta);
      ds[std::size_t(i) * nk + j] =
          pol.round(Stage::prob, numerics::mul_in(pol.stats, prow[j], diff));
    }
  }

  // dQ = dS K (over keys in order), dK = dS^T Q (over queries in order).
  std::vector<double> dq_acc(std::size_t(nq) * d, 0.0), dk_acc(std::size_t(nk) * d, 0.0);
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < nk; ++j) {
      const double w = ds[std::size_t(i) * nk + j];
      if (w == 0.0) continue;
      axpy_in(pol, pol.out_accum, &dq_acc[std::size_t(i) * d], w, &x.k[std::size_t(j) * d], d);
      axpy_in(pol, pol.out_accum, &dk_acc[std::size_t(j) * d], w, &x.q[std::size_t(i) * d], d);
    }
  store(pol, dq_acc, grad_scale, g.dq);
  store(pol, dk_acc, score_scale, g.dk);
  store(pol, dv_acc, 1.0, g.dv);
  return g;
}

HeadGrad flash2_head(const PrecisionPolicy& pol, const HeadIn& x, const Shape& s, bool causal,
                     double score_scale, double grad_scale, int br, int bc) {
  const int nq = s.seq_q, nk = s.seq_kv, d = s.head_dim;
  // D = rowsum(dO * O), FA-2's preprocessing pass.  (N_q)
  std::vector<double> delta(nq);
  for (int i = 0; i < nq; ++i)
    delta[i] = dot_in(pol, pol.stats, &x.d_out[std::size_t(i) * d], &x.o[std::size_t(i) * d], d);

  std::vector<double> dq_acc(std::size_t(nq) * d, 0.0);  // (N_q, d), across all K/V blocks
  std::vector<double> dk_acc(std::size_t(nk) * d, 0.0), dv_acc(std::size_t(nk) * d, 0.0);
  std::vector<double> p(std::size_t(br) * bc), ds(std::size_t(br) * bc);  // one (Br, Bc) tile
  // P recomputed from the lse in the forward's arithmetic (rows::RecomputedSoftmax), one row's
  // state per query row.  (N_q)
  const rows::PolicyArith a{pol};
  std::vector<rows::RecomputedSoftmax<rows::PolicyArith>> softmax(nq);
  std::vector<char> row_live(nq);
  for (int i = 0; i < nq; ++i) {
    softmax[i].scale_log2 = pol.round(Stage::stats, score_scale * numerics::kLog2e);
    row_live[i] = softmax[i].begin_row(a, x.lse[i]);
  }
  for (int j0 = 0; j0 < nk; j0 += bc) {
    const int j1 = std::min(nk, j0 + bc);
    for (int i0 = 0; i0 < nq; i0 += br) {
      const int i1 = std::min(nq, i0 + br);
      // A tile entirely above the causal diagonal contributes nothing (the kernel skips it).
      if (causal && !causal_visible(i1 - 1, j0, nq, nk)) continue;
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) {
          const bool seen = row_live[i] && (!causal || causal_visible(i, j, nq, nk));
          p[std::size_t(i - i0) * bc + (j - j0)] =
              seen ? softmax[i].prob(a, raw_score(pol, x, i, j, d)) : 0.0;
        }
      // dV_j += P^T dO_i with P cast to the prob format.
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) {
          const double pij = pol.round(Stage::prob, p[std::size_t(i - i0) * bc + (j - j0)]);
          if (pij != 0.0)
            axpy_in(pol, pol.out_accum, &dv_acc[std::size_t(j) * d], pij,
                    &x.d_out[std::size_t(i) * d], d);
        }
      // dP = dO_i V_j^T; dS = P * (dP - D) from the unrounded (register) P, as the kernel does.
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) {
          const double pij = p[std::size_t(i - i0) * bc + (j - j0)];
          double dsij = 0.0;
          if (pij != 0.0) {
            const double dpij =
                pol.round(Stage::score, dot_in(pol, pol.score_accum, &x.d_out[std::size_t(i) * d],
                                               &x.v[std::size_t(j) * d], d));
            const double diff = numerics::sub_in(pol.stats, dpij, delta[i]);
            dsij = pol.round(Stage::prob, numerics::mul_in(pol.stats, pij, diff));
          }
          ds[std::size_t(i - i0) * bc + (j - j0)] = dsij;
        }
      // dK_j += dS^T Q_i, over the tile's query rows in order.
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) {
          const double w = ds[std::size_t(i - i0) * bc + (j - j0)];
          if (w != 0.0)
            axpy_in(pol, pol.out_accum, &dk_acc[std::size_t(j) * d], w, &x.q[std::size_t(i) * d],
                    d);
        }
      // dQ_i += dS K_j (the kernel's atomicAdd; here j-blocks arrive in order, so it is fixed).
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) {
          const double w = ds[std::size_t(i - i0) * bc + (j - j0)];
          if (w != 0.0)
            axpy_in(pol, pol.out_accum, &dq_acc[std::size_t(i) * d], w, &x.k[std::size_t(j) * d],
                    d);
        }
    }
  }
  HeadGrad g;
  store(pol, dq_acc, grad_scale, g.dq);
  store(pol, dk_acc, score_scale, g.dk);
  store(pol, dv_acc, 1.0, g.dv);
  return g;
}

void put_head(Tensor& t, int b, int h, const std::vector<double>& v) {
  std::copy(v.begin(), v.end(), t.head_ptr(b, h));
}

}  // namespace

Gradients backward(Algorithm algorithm, const PrecisionPolicy& policy, const Inputs& inputs,
                   const Output& forward, const Tensor& d_out, const Options& options) {
  validate(algorithm, policy, inputs, forward, d_out, options);
  const Shape s = inputs.shape();
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  // With the scale folded into Q', S = Q' K^T: the scores carry no further scale, dK = dS^T Q'
  // already, and dQ = scale * dS K (chain rule through Q' = scale * Q).
  const bool in_query = options.scale_placement == ScalePlacement::query;
  const double score_scale = in_query ? 1.0 : scale;
  const double dq_scale = scale;

  Gradients g{Tensor(s.batch, s.heads, s.seq_q, s.head_dim),
              Tensor(s.batch, s.heads, s.seq_kv, s.head_dim),
              Tensor(s.batch, s.heads, s.seq_kv, s.head_dim)};
  // One work item per (batch, head) pair, each computed in a fixed order and written to its own
  // slice of the gradients: the thread count and the schedule cannot change a bit.
  const std::size_t pairs = static_cast<std::size_t>(s.batch) * s.heads;
  detail::parallel_for(pairs, options.threads, /*schedule_seed=*/0, [&](std::size_t bh) {
    const int b = static_cast<int>(bh / s.heads), h = static_cast<int>(bh % s.heads);
    const HeadIn x = load_head(policy, inputs, forward, d_out, options, scale, b, h);
    // score_scale multiplies dK at the end only when it was applied to the scores.
    const HeadGrad hg = algorithm == Algorithm::baseline
                            ? baseline_head(policy, x, s, options.causal, score_scale, dq_scale)
                            : flash2_head(policy, x, s, options.causal, score_scale, dq_scale,
                                          options.block_r, options.block_c);
    put_head(g.dq, b, h, hg.dq);
    put_head(g.dk, b, h, hg.dk);
    put_head(g.dv, b, h, hg.dv);
  });
  return g;
}

}  // namespace attndev::attention
