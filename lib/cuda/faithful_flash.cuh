// Faithful flash1 / flash2 kernels: the CPU emulator's per-row loop, operation for operation.
//
// The row functions are ATTNDEV_HD: test/cuda/test_faithful_host.cpp runs the very same code on
// the host against attention::run, so the transcription is checked in every build, GPU or not.
//
// These exist for bit-equality with attention::run, not for speed: one thread owns one
// (batch, head, query row) and walks the K/V blocks in increasing order exactly as the emulator
// does, in double, rounding through the same lib/numerics calls (round_to, *_in, exp2_in), which
// are deterministic and compiled for the device. The translation unit is built with
// --fmad=false: nvcc would otherwise contract a*b+c in the TwoSum/rounding code and in any
// unfused multiply-add, and the results would drift from the host's in the last bit.
//
// The per-row state of flash2 (the unnormalized accumulator acc[d]) lives in the output buffer
// itself, so any head dim works without per-thread arrays; Bc-sized score blocks are recomputed
// instead of stored (a dot product in a fixed order gives the same bits every time).
#pragma once

#include <cmath>

#include "attention/attention.hpp"
#include "numerics/arith.hpp"
#include "numerics/host_device.hpp"
#include "numerics/math.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda::faithful {

ATTNDEV_HD inline int imin(int a, int b) {
  return a < b ? a : b;
}

// Everything a faithful kernel needs, by value (trivially copyable: it is a kernel argument).
struct Params {
  const double* q;  // (B, H, N_q, d), values in the policy's input format
  const double* k;  // (B, H, N_kv, d)
  const double* v;  // (B, H, N_kv, d)
  double* o;        // (B, H, N_q, d)
  double* lse;      // (B, H, N_q)
  double* scratch;  // (B, H, N_q, d): flash1's per-block PV sums
  int batch, heads, seq_q, seq_kv, head_dim;
  int block_r, block_c;
  bool causal;
  // Scale placement `scores`: S is multiplied by `scale` (flash1) or folded into exp2's factor
  // (flash2). Placement `query`: Q was pre-scaled on the host and scale_scores is false.
  bool scale_scores;
  double scale;
  numerics::PrecisionPolicy policy;
};

// Keys visible to query row i: j in [0, visible_count). Bottom-right aligned causal mask, the
// emulator's detail::visible_count (attention::causal_visible), spelled out for the device.
ATTNDEV_HD inline int visible_count(const Params& p, int i) {
  if (!p.causal) return p.seq_kv;
  const long n = static_cast<long>(i) + (p.seq_kv - p.seq_q) + 1;
  return static_cast<int>(n < 0 ? 0 : (n > p.seq_kv ? p.seq_kv : n));
}

// std::max's exact semantics (a < b ? b : a), not fmax: they differ when a NaN score appears
// (an overflowed policy), and the NaN must propagate the same way as on the host.
ATTNDEV_HD inline double max_like_std(double a, double b) {
  return a < b ? b : a;
}

// dot(q_i, k_j) accumulated sequentially over t in the score_accum format.
ATTNDEV_HD inline double dot_in(const Params& p, const double* q_row, const double* k_row) {
  using namespace numerics;
  const Format f = p.policy.score_accum;
  double acc = 0.0;
  for (int t = 0; t < p.head_dim; ++t) acc = mac_in(f, p.policy.fma, acc, q_row[t], k_row[t]);
  return acc;
}

// The K/V loop bound of row i's Q block (Br rows): blocks past the block's last visible key are
// never started, as in the emulator's work item over that Q block.
ATTNDEV_HD inline int q_block_kv_end(const Params& p, int i) {
  const int row_end = imin(p.seq_q, (i / p.block_r + 1) * p.block_r);
  return visible_count(p, row_end - 1);
}

// ---- flash2 (FA-2): outer loop over Q rows, inner over K/V blocks; unnormalized acc. ----
// lib/attention/flash2.cpp, flash2_generic, for one row; see its header for the formulas.
ATTNDEV_HD inline void flash2_row(const Params& p, int b, int h, int i) {
  using namespace numerics;
  const PrecisionPolicy& pol = p.policy;
  const Format st = pol.stats, oa = pol.out_accum;
  const bool fused = pol.fma;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const int d = p.head_dim;
  const double* q_i = p.q + (head * p.seq_q + i) * d;  // (d)
  const double* k = p.k + head * p.seq_kv * d;         // (N_kv, d)
  const double* v = p.v + head * p.seq_kv * d;         // (N_kv, d)
  double* acc = p.o + (head * p.seq_q + i) * d;        // (d) unnormalized O, then O
  const double neg_inf = -INFINITY;
  // log2(e) folded into the scale once, in the stats format (flash2_scale_log2).
  const double scale = p.scale_scores ? p.scale : 1.0;
  const double scale_log2 = pol.round(Stage::stats, scale * 1.4426950408889634074);

  for (int t = 0; t < d; ++t) acc[t] = 0.0;
  double m = neg_inf, l = 0.0;
  const int last_vis = q_block_kv_end(p, i);
  const int n_vis = visible_count(p, i);
  for (int j0 = 0; j0 < last_vis; j0 += p.block_c) {
    const int j1 = imin(p.seq_kv, j0 + p.block_c);
    const int j_end = imin(j1, n_vis);
    if (j_end <= j0) continue;  // the row sees no key of this block: untouched by it
    auto score = [&](int j) {
      return pol.round(Stage::score, dot_in(p, q_i, k + static_cast<std::size_t>(j) * d));
    };
    double row_max = neg_inf;
    for (int j = j0; j < j_end; ++j) row_max = max_like_std(row_max, score(j));
    const double m_new = max_like_std(m, row_max);
    if (m_new == neg_inf) continue;  // every score so far is -inf: -inf - -inf would be NaN
    const double max_scaled = mul_in(st, m_new, scale_log2);
    const double alpha =
        m == neg_inf ? 0.0 : exp2_in(st, mul_in(st, sub_in(st, m, m_new), scale_log2));
    l = mul_in(st, l, alpha);
    for (int t = 0; t < d; ++t) acc[t] = mul_in(oa, acc[t], alpha);
    // Each l and acc[t] sees the same operations in the same order as in the emulator (which
    // finishes l before starting acc; they are independent, so interleaving changes no bit).
    for (int j = j0; j < j_end; ++j) {
      const double x = score(j);  // recomputed: the same bits as the first time
      const double arg = fused ? fma_in(st, x, scale_log2, -max_scaled)
                               : sub_in(st, mul_in(st, x, scale_log2), max_scaled);
      const double p_ij = exp2_in(st, arg);
      l = add_in(st, l, p_ij);  // the stats-format p, before the cast (FA-2's row sum)
      const double prob = pol.round(Stage::prob, p_ij);
      const double* v_j = v + static_cast<std::size_t>(j) * d;
      for (int t = 0; t < d; ++t) acc[t] = mac_in(oa, fused, acc[t], prob, v_j[t]);
    }
    m = m_new;
  }

  double* lse = p.lse + head * p.seq_q + i;
  if (l == 0.0) {  // no visible key at all: defined as 0, never 0/0
    for (int t = 0; t < d; ++t) acc[t] = 0.0;
    *lse = neg_inf;
    return;
  }
  const double inv_l = div_in(st, 1.0, l);
  for (int t = 0; t < d; ++t) acc[t] = pol.round(Stage::output, mul_in(oa, acc[t], inv_l));
  *lse = m * scale + log(l);
}

// ---- flash1 (FA-1 Algorithm 1): O, l, m round-trip through "HBM" after every K/V block. ----
// lib/attention/flash1.cpp, flash1_generic, for one row; see its header for the formulas.
ATTNDEV_HD inline void flash1_row(const Params& p, int b, int h, int i) {
  using namespace numerics;
  const PrecisionPolicy& pol = p.policy;
  const Format st = pol.stats, oa = pol.out_accum, sa = pol.score_accum;
  const bool fused = pol.fma;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const int d = p.head_dim;
  const double* q_i = p.q + (head * p.seq_q + i) * d;  // (d)
  const double* k = p.k + head * p.seq_kv * d;         // (N_kv, d)
  const double* v = p.v + head * p.seq_kv * d;         // (N_kv, d)
  double* o_i = p.o + (head * p.seq_q + i) * d;        // (d), output format between blocks
  double* pv = p.scratch + (head * p.seq_q + i) * d;   // (d), out_accum format
  const double neg_inf = -INFINITY;
  // The scale as the score arithmetic holds it: rounded to score_accum (Problem::score_scale).
  const double scale = round_to(sa, p.scale);

  for (int t = 0; t < d; ++t) o_i[t] = 0.0;
  double m = neg_inf, l = 0.0;  // stats format
  const int last_vis = q_block_kv_end(p, i);
  const int n_vis = visible_count(p, i);
  for (int j0 = 0; j0 < last_vis; j0 += p.block_c) {
    const int j1 = imin(p.seq_kv, j0 + p.block_c);
    const int j_end = imin(j1, n_vis);
    if (j_end <= j0) continue;
    auto score = [&](int j) {
      const double dot = dot_in(p, q_i, k + static_cast<std::size_t>(j) * d);
      return pol.round(Stage::score, p.scale_scores ? mul_in(sa, dot, scale) : dot);
    };
    double mt = neg_inf;
    for (int j = j0; j < j_end; ++j) mt = max_like_std(mt, score(j));
    if (mt == neg_inf) continue;  // nothing visible is finite: -inf - -inf would be NaN

    double lt = 0.0;
    for (int t = 0; t < d; ++t) pv[t] = 0.0;
    for (int j = j0; j < j_end; ++j) {
      const double pt = exp_in(st, sub_in(st, score(j), mt));
      lt = add_in(st, lt, pt);
      const double prob = pol.round(Stage::prob, pt);
      const double* v_j = v + static_cast<std::size_t>(j) * d;
      for (int t = 0; t < d; ++t) pv[t] = mac_in(oa, fused, pv[t], prob, v_j[t]);
    }
    const double m_new = max_like_std(m, mt);
    const double f_old = m == neg_inf ? 0.0 : exp_in(st, sub_in(st, m, m_new));
    const double f_new = exp_in(st, sub_in(st, mt, m_new));
    const double l_new = add_in(st, mul_in(st, f_old, l), mul_in(st, f_new, lt));
    // O_i was stored normalized: weight it back by l_i * e^(m_i - m_new) before adding the block.
    const double c_old = mul_in(st, l, f_old);
    for (int t = 0; t < d; ++t) {
      const double num = add_in(oa, mul_in(oa, c_old, o_i[t]), mul_in(oa, f_new, pv[t]));
      o_i[t] = pol.round(Stage::output, div_in(oa, num, l_new));
    }
    m = pol.round(Stage::stats, m_new);
    l = pol.round(Stage::stats, l_new);
  }
  p.lse[head * p.seq_q + i] = l == 0.0 ? neg_inf : m + log(l);
}

#if defined(__CUDACC__)
template <attention::Algorithm A>
__global__ void faithful_kernel(Params p) {
  const long row = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long rows = static_cast<long>(p.batch) * p.heads * p.seq_q;
  if (row >= rows) return;
  const int i = static_cast<int>(row % p.seq_q);
  const int bh = static_cast<int>(row / p.seq_q);
  if constexpr (A == attention::Algorithm::flash2)
    flash2_row(p, bh / p.heads, bh % p.heads, i);
  else
    flash1_row(p, bh / p.heads, bh % p.heads, i);
}
#endif

}  // namespace attndev::cuda::faithful
