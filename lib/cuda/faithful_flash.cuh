// Faithful flash1 / flash2 kernels: the CPU emulator's per-row loop, operation for operation.
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
#include "numerics/math.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda::faithful {

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

__device__ inline bool visible(const Params& p, int i, int j) {
  // Bottom-right aligned (attention::causal_visible), spelled out here because that function
  // is host-only.
  return !p.causal || static_cast<long>(j) <= static_cast<long>(i) + (p.seq_kv - p.seq_q);
}

// The last K/V row any query of row i's Q block can see: blocks past it are skipped for the
// whole Q block, as the emulator (and a real kernel) does.
__device__ inline int visible_kv_end(const Params& p, int i) {
  if (!p.causal) return p.seq_kv;
  const int q_block_last = min(p.seq_q, (i / p.block_r + 1) * p.block_r) - 1;
  const long end = static_cast<long>(q_block_last) + (p.seq_kv - p.seq_q) + 1;
  return static_cast<int>(end < 0 ? 0 : (end > p.seq_kv ? p.seq_kv : end));
}

// dot(q_i, k_j) accumulated sequentially over t in the score_accum format.
__device__ inline double dot_in(const Params& p, const double* q_row, const double* k_row) {
  using namespace numerics;
  const Format f = p.policy.score_accum;
  double acc = 0.0;
  for (int t = 0; t < p.head_dim; ++t) acc = mac_in(f, p.policy.fma, acc, q_row[t], k_row[t]);
  return acc;
}

// ---- flash2 (FA-2): outer loop over Q rows, inner over K/V blocks; unnormalized acc. ----
__device__ inline void flash2_row(const Params& p, int b, int h, int i) {
  using namespace numerics;
  const PrecisionPolicy& pol = p.policy;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const double* q_row = p.q + (head * p.seq_q + i) * p.head_dim;   // (d)
  const double* k_head = p.k + head * p.seq_kv * p.head_dim;       // (N_kv, d)
  const double* v_head = p.v + head * p.seq_kv * p.head_dim;       // (N_kv, d)
  double* acc = p.o + (head * p.seq_q + i) * p.head_dim;           // (d)
  const double scale = p.scale_scores ? p.scale : 1.0;
  // log2(e) folded into the scale once, in the stats format, as FA-2 does in its registers.
  const double scale_log2 = pol.round(Stage::stats, scale * 1.4426950408889634);

  for (int t = 0; t < p.head_dim; ++t) acc[t] = 0.0;
  double m = -INFINITY, l = 0.0;
  const int kv_end = visible_kv_end(p, i);
  for (int j0 = 0; j0 < kv_end; j0 += p.block_c) {
    const int j1 = min(p.seq_kv, j0 + p.block_c);
    double m_new = m;
    for (int j = j0; j < j1; ++j) {
      if (!visible(p, i, j)) continue;
      const double s = pol.round(Stage::score, dot_in(p, q_row, k_head + std::size_t(j) * p.head_dim));
      m_new = fmax(m_new, s);
    }
    // Nothing visible yet for this row: skipping avoids exp2(-inf - -inf) = NaN.
    if (m_new == -INFINITY) continue;
    const double max_scaled = mul_in(pol.stats, m_new, scale_log2);
    const double alpha =
        m == -INFINITY ? 0.0
                       : exp2_in(pol.stats, mul_in(pol.stats, sub_in(pol.stats, m, m_new), scale_log2));
    l = mul_in(pol.stats, l, alpha);
    for (int t = 0; t < p.head_dim; ++t) acc[t] = mul_in(pol.out_accum, acc[t], alpha);
    for (int j = j0; j < j1; ++j) {
      if (!visible(p, i, j)) continue;
      const double* k_row = k_head + std::size_t(j) * p.head_dim;
      const double s = pol.round(Stage::score, dot_in(p, q_row, k_row));
      // FA-2 evaluates s*scale_log2 - max_scaled as one FFMA; the policy may ask for two roundings.
      const double x = pol.fma ? fma_in(pol.stats, s, scale_log2, -max_scaled)
                               : sub_in(pol.stats, mul_in(pol.stats, s, scale_log2), max_scaled);
      const double p_ij = exp2_in(pol.stats, x);
      l = add_in(pol.stats, l, p_ij);  // the fp32 p, before the cast (FA-2's row sum)
      const double prob = pol.round(Stage::prob, p_ij);
      const double* v_row = v_head + std::size_t(j) * p.head_dim;
      for (int t = 0; t < p.head_dim; ++t)
        acc[t] = mac_in(pol.out_accum, pol.fma, acc[t], prob, v_row[t]);
    }
    m = m_new;
  }

  double* lse = p.lse + head * p.seq_q + i;
  if (l == 0.0) {  // fully masked row: defined as 0, never 0/0
    for (int t = 0; t < p.head_dim; ++t) acc[t] = 0.0;
    *lse = -INFINITY;
    return;
  }
  const double inv_l = div_in(pol.stats, 1.0, l);
  for (int t = 0; t < p.head_dim; ++t)
    acc[t] = pol.round(Stage::output, mul_in(pol.out_accum, acc[t], inv_l));
  *lse = m * scale + log(l);
}

// ---- flash1 (FA-1 Algorithm 1): O, l, m round-trip through "HBM" after every K/V block. ----
__device__ inline void flash1_row(const Params& p, int b, int h, int i) {
  using namespace numerics;
  const PrecisionPolicy& pol = p.policy;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const double* q_row = p.q + (head * p.seq_q + i) * p.head_dim;   // (d)
  const double* k_head = p.k + head * p.seq_kv * p.head_dim;       // (N_kv, d)
  const double* v_head = p.v + head * p.seq_kv * p.head_dim;       // (N_kv, d)
  double* o = p.o + (head * p.seq_q + i) * p.head_dim;             // (d), output format
  double* pv = p.scratch + (head * p.seq_q + i) * p.head_dim;      // (d), out_accum format

  for (int t = 0; t < p.head_dim; ++t) o[t] = 0.0;
  double m_i = -INFINITY, l_i = 0.0;
  const int kv_end = visible_kv_end(p, i);
  for (int j0 = 0; j0 < kv_end; j0 += p.block_c) {
    const int j1 = min(p.seq_kv, j0 + p.block_c);
    auto score = [&](int j) {
      const double d = dot_in(p, q_row, k_head + std::size_t(j) * p.head_dim);
      return pol.round(Stage::score, p.scale_scores ? mul_in(pol.score_accum, d, p.scale) : d);
    };
    double mt = -INFINITY;
    for (int j = j0; j < j1; ++j)
      if (visible(p, i, j)) mt = fmax(mt, score(j));
    // The block holds nothing this row may see: O, l, m stay as they are (no exp(-inf - -inf)).
    if (mt == -INFINITY) continue;
    const double m_new = fmax(m_i, mt);
    const double e_old = m_i == -INFINITY ? 0.0 : exp_in(pol.stats, sub_in(pol.stats, m_i, m_new));
    const double e_new = exp_in(pol.stats, sub_in(pol.stats, mt, m_new));

    double lt = 0.0;
    for (int t = 0; t < p.head_dim; ++t) pv[t] = 0.0;
    for (int j = j0; j < j1; ++j) {
      if (!visible(p, i, j)) continue;
      const double pt = exp_in(pol.stats, sub_in(pol.stats, score(j), mt));
      lt = add_in(pol.stats, lt, pt);
      const double prob = pol.round(Stage::prob, pt);
      const double* v_row = v_head + std::size_t(j) * p.head_dim;
      for (int t = 0; t < p.head_dim; ++t)
        pv[t] = mac_in(pol.out_accum, pol.fma, pv[t], prob, v_row[t]);
    }
    const double l_new =
        add_in(pol.stats, mul_in(pol.stats, e_old, l_i), mul_in(pol.stats, e_new, lt));
    // O_i was stored normalized: scale it back by l_i * e^(m_i - m_new) before adding the block.
    const double old_weight = mul_in(pol.stats, l_i, e_old);
    for (int t = 0; t < p.head_dim; ++t) {
      const double num = add_in(pol.out_accum, mul_in(pol.out_accum, old_weight, o[t]),
                                mul_in(pol.out_accum, e_new, pv[t]));
      o[t] = pol.round(Stage::output, div_in(pol.out_accum, num, l_new));
    }
    m_i = pol.round(Stage::stats, m_new);
    l_i = pol.round(Stage::stats, l_new);
  }
  double* lse = p.lse + head * p.seq_q + i;
  *lse = l_i == 0.0 ? -INFINITY : m_i + log(l_i);
}

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

}  // namespace attndev::cuda::faithful
