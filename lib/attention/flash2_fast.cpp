// flash2, fast path: the same operations as flash2.cpp (read that file for the semantics), with
// the compute type T = float when every arithmetic stage is fp32 and T = double when every stage
// is fp64. In T, each *_in call of the generic path is one IEEE operation, so:
//   mul_in/add_in/sub_in/div_in(stats|out_accum)  ->  * + - / in T
//   fma_in(stats) / mac_in(.., fused=true)         ->  std::fma / vector FMA in T
//   exp2_in(stats, x)                              ->  exp2_f32 / exp2_f64 (numerics' polynomial)
//   R_score, R_prob, R_output                      ->  round_to_bf16/fp16/tf32 on floats (or none)
// and the order of every sum is unchanged (kernels.hpp), so the results are the same bits.
#include <cmath>
#include <limits>
#include <vector>

#include "attention/detail.hpp"
#include "attention/kernels.hpp"
#include "numerics/math.hpp"

namespace attndev::attention::detail {

namespace {

template <class T>
T exp2_t(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return numerics::exp2_f32(x);
  } else {
    return numerics::exp2_f64(x);
  }
}

template <class T, bool kFused>
void flash2_block(const Problem& p, const Packed<T>& pk, const RowBlock& rb, Output& out) {
  using numerics::Stage;
  const numerics::PrecisionPolicy& pol = p.policy;
  const int d = pk.d, ld = pk.ld_v, padded = pk.padded, n_q = p.shape.seq_q, n_kv = p.shape.seq_kv;
  const int bh = rb.b * p.shape.heads + rb.h;
  const T scale_log2 = static_cast<T>(flash2_scale_log2(p));
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const int rows = rb.row_end - rb.row_begin;

  std::vector<T> m(static_cast<std::size_t>(rows), neg_inf);      // (Br) running max
  std::vector<T> l(static_cast<std::size_t>(rows), T(0));         // (Br) running sum
  std::vector<T> acc(static_cast<std::size_t>(rows) * ld, T(0));  // (Br, ld) unnormalized O
  std::vector<T> s(static_cast<std::size_t>(rows) * padded);      // (Br, BcP) S, then p, then P
  std::vector<int> count(static_cast<std::size_t>(rows));         // keys used per row
  const T* q = pk.q_head(bh) + static_cast<std::size_t>(rb.row_begin) * d;  // (Br, d)
  const T* v = pk.v_head(bh);                                               // (N_kv, ld)

  const int last_vis = visible_count(rb.row_end - 1, n_q, n_kv, p.causal);
  for (int blk = 0; blk * pk.block < last_vis; ++blk) {
    const int j0 = blk * pk.block;
    const int j1 = std::min(n_kv, j0 + pk.block);
    qk_block<T, kFused>(q, rows, d, pk.kt_tile(bh, blk), padded, s.data(), padded);
    for (int r = 0; r < rows; ++r) {
      const int i = rb.row_begin + r;
      const int n = std::min(j1, visible_count(i, n_q, n_kv, p.causal)) - j0;
      count[r] = 0;
      if (n <= 0) continue;  // the row sees nothing of this block: untouched
      T* sr = s.data() + static_cast<std::size_t>(r) * padded;
      round_in_place<T>(pol.score, sr, n);
      T row_max = neg_inf;
      for (int j = 0; j < n; ++j) row_max = std::max(row_max, sr[j]);
      const T m_new = std::max(m[r], row_max);
      if (m_new == neg_inf) continue;  // every score so far is -inf: no -inf - -inf
      const T max_scaled = m_new * scale_log2;
      const T alpha = m[r] == neg_inf ? T(0) : exp2_t<T>((m[r] - m_new) * scale_log2);
      for (int j = 0; j < n; ++j) {
        const T arg =
            kFused ? std::fma(sr[j], scale_log2, -max_scaled) : sr[j] * scale_log2 - max_scaled;
        sr[j] = exp2_t<T>(arg);
      }
      T lr = l[r] * alpha;
      for (int j = 0; j < n; ++j) lr = lr + sr[j];  // FA-2 sums p before the cast
      l[r] = lr;
      T* ar = acc.data() + static_cast<std::size_t>(r) * ld;
      for (int t = 0; t < ld; ++t) ar[t] = ar[t] * alpha;
      round_in_place<T>(pol.prob, sr, n);  // P as fed to the second mma
      m[r] = m_new;
      count[r] = n;
    }
    pv_block<T, kFused>(s.data(), padded, count.data(), rows, v + static_cast<std::size_t>(j0) * ld,
                        ld, acc.data());
  }

  double* o = out.o.head_ptr(rb.b, rb.h);  // (N_q, d)
  double* lse = out.lse.data() + static_cast<std::size_t>(bh) * n_q;
  const double lse_scale = p.scale_in_query ? 1.0 : p.scale;
  std::vector<T> row(static_cast<std::size_t>(ld));
  for (int r = 0; r < rows; ++r) {
    const int i = rb.row_begin + r;
    double* o_i = o + static_cast<std::size_t>(i) * d;
    if (l[r] == T(0)) {
      for (int t = 0; t < d; ++t) o_i[t] = 0.0;
      lse[i] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const T inv_l = T(1) / l[r];
    const T* ar = acc.data() + static_cast<std::size_t>(r) * ld;
    for (int t = 0; t < d; ++t) row[t] = ar[t] * inv_l;
    round_in_place<T>(pol.output, row.data(), d);
    for (int t = 0; t < d; ++t) o_i[t] = static_cast<double>(row[t]);
    lse[i] = static_cast<double>(m[r]) * lse_scale + std::log(static_cast<double>(l[r]));
  }
}

template <class T>
void flash2_fast_t(const Problem& p, Output& out) {
  const Packed<T> pk = pack_inputs<T>(p, p.block_c);
  const std::size_t items = row_block_count(p.shape, p.block_r);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const RowBlock rb = row_block(p.shape, p.block_r, item);
    if (p.policy.fma) {
      flash2_block<T, true>(p, pk, rb, out);
    } else {
      flash2_block<T, false>(p, pk, rb, out);
    }
  });
}

}  // namespace

void flash2_fast(const Problem& p, FastKind kind, Output& out) {
  if (kind == FastKind::f32) {
    flash2_fast_t<float>(p, out);
  } else {
    flash2_fast_t<double>(p, out);
  }
}

}  // namespace attndev::attention::detail
