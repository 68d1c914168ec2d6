// baseline, fast path (and so the FP64 golden's fast path): the operations of baseline.cpp, in
// T = float when every arithmetic stage is fp32, T = double when every stage is fp64. See
// flash2_fast.cpp for the correspondence of each *_in call with an IEEE operation in T; the sums
// keep their order (kernels.hpp), so the results are the same bits as the generic path.
//
// A work item is kBaselineRowBlock query rows with their full rows of S and P materialized
// (rows x N_kv), as a framework stores them; K is packed in column blocks of kPackColumns.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/detail.hpp"
#include "attention/kernels.hpp"
#include "numerics/math.hpp"

namespace attndev::attention::detail {

namespace {

// Columns of K per packed tile. A multiple of every vector width, so the tiles of one row of S
// are contiguous and a row of S is one array over j.
constexpr int kPackColumns = 64;

template <class T>
T exp_t(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return numerics::exp_f32(x);
  } else {
    return numerics::exp_f64(x);
  }
}

template <class T, bool kFused>
void baseline_block(const Problem& p, const Packed<T>& pk, const RowBlock& rb, Output& out) {
  using numerics::Stage;
  const numerics::PrecisionPolicy& pol = p.policy;
  const int d = pk.d, ld = pk.ld_v, n_q = p.shape.seq_q, n_kv = p.shape.seq_kv;
  const int ld_s = pk.blocks * pk.padded;
  const int bh = rb.b * p.shape.heads + rb.h;
  const T scale = static_cast<T>(p.score_scale());
  const int rows = rb.row_end - rb.row_begin;

  std::vector<T> s(static_cast<std::size_t>(rows) * ld_s);        // (rows, N_kv padded): S, then P
  std::vector<T> acc(static_cast<std::size_t>(rows) * ld, T(0));  // (rows, ld)
  std::vector<int> count(static_cast<std::size_t>(rows));
  std::vector<double> lse_row(static_cast<std::size_t>(rows));
  const T* q = pk.q_head(bh) + static_cast<std::size_t>(rb.row_begin) * d;  // (rows, d)

  const int n_vis_max = visible_count(rb.row_end - 1, n_q, n_kv, p.causal);
  for (int blk = 0; blk * pk.block < n_vis_max; ++blk)
    qk_block<T, kFused>(q, rows, d, pk.kt_tile(bh, blk), pk.padded,
                        s.data() + static_cast<std::size_t>(blk) * pk.padded, ld_s);

  for (int r = 0; r < rows; ++r) {
    const int n = visible_count(rb.row_begin + r, n_q, n_kv, p.causal);
    count[r] = n;
    if (n == 0) {
      lse_row[r] = -std::numeric_limits<double>::infinity();
      continue;
    }
    T* sr = s.data() + static_cast<std::size_t>(r) * ld_s;
    if (!p.scale_in_query)
      for (int j = 0; j < n; ++j) sr[j] = sr[j] * scale;
    round_in_place<T>(pol.score, sr, n);
    T m = -std::numeric_limits<T>::infinity();
    for (int j = 0; j < n; ++j) m = std::max(m, sr[j]);
    for (int j = 0; j < n; ++j) sr[j] = exp_t<T>(sr[j] - m);  // e_ij
    T l = T(0);
    for (int j = 0; j < n; ++j) l = l + sr[j];
    for (int j = 0; j < n; ++j) sr[j] = sr[j] / l;
    round_in_place<T>(pol.prob, sr, n);  // P as stored
    lse_row[r] = static_cast<double>(m) + std::log(static_cast<double>(l));
  }

  // PV over key blocks of kPackColumns, in increasing order: the block of V stays in cache while
  // every row uses it, and each acc element still sums over j = 0, 1, ... in order.
  std::vector<int> block_count(static_cast<std::size_t>(rows));
  for (int j0 = 0; j0 < n_vis_max; j0 += kPackColumns) {
    for (int r = 0; r < rows; ++r) block_count[r] = std::clamp(count[r] - j0, 0, kPackColumns);
    pv_block<T, kFused>(s.data() + j0, ld_s, block_count.data(), rows,
                        pk.v_head(bh) + static_cast<std::size_t>(j0) * ld, ld, acc.data());
  }

  double* o = out.o.head_ptr(rb.b, rb.h);  // (N_q, d)
  double* lse = out.lse.data() + static_cast<std::size_t>(bh) * n_q;
  for (int r = 0; r < rows; ++r) {
    const int i = rb.row_begin + r;
    T* ar = acc.data() + static_cast<std::size_t>(r) * ld;
    round_in_place<T>(pol.output, ar, d);
    for (int t = 0; t < d; ++t)
      o[static_cast<std::size_t>(i) * d + t] = count[r] ? static_cast<double>(ar[t]) : 0.0;
    lse[i] = lse_row[r];
  }
}

template <class T>
void baseline_fast_t(const Problem& p, Output& out) {
  const Packed<T> pk = pack_inputs<T>(p, kPackColumns);
  const std::size_t items = row_block_count(p.shape, kBaselineRowBlock);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const RowBlock rb = row_block(p.shape, kBaselineRowBlock, item);
    if (p.policy.fma) {
      baseline_block<T, true>(p, pk, rb, out);
    } else {
      baseline_block<T, false>(p, pk, rb, out);
    }
  });
}

}  // namespace

void baseline_fast(const Problem& p, FastKind kind, Output& out) {
  if (kind == FastKind::f32) {
    baseline_fast_t<float>(p, out);
  } else {
    baseline_fast_t<double>(p, out);
  }
}

}  // namespace attndev::attention::detail
