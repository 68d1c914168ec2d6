// flash3-fp8: FlashAttention-3's fp8 forward (Shah et al., 2024, Sec. 3.3 and Table 3), emulated.
//
// Preparation (prepare_fp8), from Q, K, V held in the policy's `input` format (fp16/bf16):
//   incoherent processing (optional): Q <- R_input((Q D) H / sqrt(d)), same for K, computed in
//     the score_accum format; V is not rotated (it meets P, not Q).
//   quantization: per block of Br rows of Q and of Bc rows of K and V (or one scale per tensor):
//     scale = R_fp32(amax / 448), x8 = e4m3_sat(R_fp32(x / scale)).
// Per query row, flash2's loop (see flash2.cpp) with three changes, where the kernel has them:
//   S_ij   = R_score(mul_in(score_accum, dot8(q_i, k_j), descale))
//            dot8 accumulated in score_accum (the fp8 wgmma accumulates in fp32);
//            descale = R_score_accum(scale_q(i) * scale_k(j)) (the two dequantization scales)
//   P_ij   = R_prob(p_ij): e4m3 under the fp8-e4m3 preset. FA-3 casts the unnormalized
//            p = exp2(...) in [0, 1] without a scale, so p < 2^-10 becomes 0 and p < 2^-6 keeps
//            fewer than 3 fraction bits (e4m3 subnormals): the kernel's own truncation of the tail.
//   PV     = per K/V block, pv_t = sum_j P_ij V8_jt in out_accum (the block's mma), then
//            acc_t = mac(acc_t * alpha, pv_t, scale_v(block)): V's scale differs per block, so it
//            is applied to the block's product before it joins the running accumulator.
// The row max, l, alpha, the final 1/l and lse are flash2's, in the stats format.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/fp8_attention.hpp"
#include "numerics/arith.hpp"
#include "numerics/math.hpp"

namespace attndev::attention::detail {

using numerics::Stage;

namespace {

bool is_fp8_format(numerics::Format f) {
  return f == numerics::Format::fp8_e4m3 || f == numerics::Format::fp8_e5m2;
}

}  // namespace

Fp8Problem prepare_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options) {
  if (is_fp8_format(p.policy.input))
    throw std::invalid_argument(
        std::string(algorithm_name(algorithm)) +
        " quantizes Q, K, V to scaled e4m3 itself, so the policy's input stage must be the format "
        "the inputs are stored in before quantization (got " +
        numerics::format_name(p.policy.input) +
        "); use e.g. {\"base\": \"fp8-e4m3\", \"input\": \"fp16\"}");
  Fp8Problem f;
  f.p = &p;
  if (algorithm == Algorithm::baseline_fp8) {
    // FA-3's baseline: one scale per tensor, no rotation (Options::fp8 does not apply).
    f.q = fp8::quantize_per_tensor(p.q);
    f.k = fp8::quantize_per_tensor(p.k);
    f.v = fp8::quantize_per_tensor(p.v);
    return f;
  }
  const bool blocks = options.block_quantization && algorithm != Algorithm::flash3_fp8_per_tensor;
  const bool rotate =
      options.incoherent_processing && algorithm != Algorithm::flash3_fp8_no_hadamard;
  Tensor q = p.q;  // (B, H, N_q, d)
  Tensor k = p.k;  // (B, H, N_kv, d)
  if (rotate) {
    const std::vector<double> signs = fp8::random_signs(p.shape.head_dim, options.hadamard_seed);
    fp8::rotate_rows(q, signs, p.policy.score_accum, p.policy.input);
    fp8::rotate_rows(k, signs, p.policy.score_accum, p.policy.input);
  }
  f.q = blocks ? fp8::quantize_blocks(q, p.block_r) : fp8::quantize_per_tensor(q);
  f.k = blocks ? fp8::quantize_blocks(k, p.block_c) : fp8::quantize_per_tensor(k);
  f.v = blocks ? fp8::quantize_blocks(p.v, p.block_c) : fp8::quantize_per_tensor(p.v);
  return f;
}

void run_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options, Output& out) {
  const Fp8Problem f = prepare_fp8(algorithm, p, options);
  const bool baseline = algorithm == Algorithm::baseline_fp8;
  const int rows = baseline ? kBaselineRowBlock : p.block_r;
  const std::size_t items = row_block_count(p.shape, rows);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const RowBlock rb = row_block(p.shape, rows, item);
    if (baseline) {
      baseline_fp8_rows(f, rb, out);
    } else {
      flash3_fp8_rows(f, rb, out);
    }
  });
}

void flash3_fp8_rows(const Fp8Problem& f, const RowBlock& rb, Output& out) {
  const Problem& p = *f.p;
  const numerics::PrecisionPolicy& pol = p.policy;
  const numerics::Format st = pol.stats, oa = pol.out_accum, sa = pol.score_accum;
  const int d = p.shape.head_dim, n_q = p.shape.seq_q, n_kv = p.shape.seq_kv;
  const bool fused = pol.fma;
  const double scale_log2 = flash2_scale_log2(p);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const double* q = f.q.values.head_ptr(rb.b, rb.h);  // (N_q, d) e4m3
  const double* k = f.k.values.head_ptr(rb.b, rb.h);  // (N_kv, d) e4m3
  const double* v = f.v.values.head_ptr(rb.b, rb.h);  // (N_kv, d) e4m3
  double* o = out.o.head_ptr(rb.b, rb.h);             // (N_q, d)
  double* lse = out.lse.data() + (static_cast<std::size_t>(rb.b) * p.shape.heads + rb.h) * n_q;

  const int rows = rb.row_end - rb.row_begin;
  std::vector<double> m(static_cast<std::size_t>(rows), neg_inf);    // (Br) running max
  std::vector<double> l(static_cast<std::size_t>(rows), 0.0);        // (Br) running sum
  std::vector<double> acc(static_cast<std::size_t>(rows) * d, 0.0);  // (Br, d) unnormalized O
  std::vector<double> s(static_cast<std::size_t>(p.block_c));        // (Bc) one row of S, then p
  std::vector<double> pv(static_cast<std::size_t>(d));               // (d) this block's P V8

  const int last_vis = visible_count(rb.row_end - 1, n_q, n_kv, p.causal);
  for (int j0 = 0; j0 < last_vis; j0 += p.block_c) {
    const int j1 = std::min(n_kv, j0 + p.block_c);
    const double scale_v = f.v.scale(rb.b, rb.h, j0);
    for (int r = 0; r < rows; ++r) {
      const int i = rb.row_begin + r;
      const int j_end = std::min(j1, visible_count(i, n_q, n_kv, p.causal));
      if (j_end <= j0) continue;
      const double descale =
          numerics::mul_in(sa, f.q.scale(rb.b, rb.h, i), f.k.scale(rb.b, rb.h, j0));
      const double* q_i = q + static_cast<std::size_t>(i) * d;
      double row_max = neg_inf;
      for (int j = j0; j < j_end; ++j) {
        const double* k_j = k + static_cast<std::size_t>(j) * d;
        double dot = 0.0;
        for (int t = 0; t < d; ++t) dot = numerics::mac_in(sa, fused, dot, q_i[t], k_j[t]);
        s[j - j0] = pol.round(Stage::score, numerics::mul_in(sa, dot, descale));
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
        s[j - j0] = numerics::exp2_in(st, arg);  // p_ij in [0, 1], stats format
      }
      l[r] = numerics::mul_in(st, l[r], alpha);
      for (int j = j0; j < j_end; ++j) l[r] = numerics::add_in(st, l[r], s[j - j0]);
      std::fill(pv.begin(), pv.end(), 0.0);
      for (int j = j0; j < j_end; ++j) {
        const double prob = pol.round(Stage::prob, s[j - j0]);
        const double* v_j = v + static_cast<std::size_t>(j) * d;
        for (int t = 0; t < d; ++t) pv[t] = numerics::mac_in(oa, fused, pv[t], prob, v_j[t]);
      }
      double* acc_r = acc.data() + static_cast<std::size_t>(r) * d;
      for (int t = 0; t < d; ++t)
        acc_r[t] =
            numerics::mac_in(oa, fused, numerics::mul_in(oa, acc_r[t], alpha), pv[t], scale_v);
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
