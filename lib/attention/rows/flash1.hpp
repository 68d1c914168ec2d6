// flash1: FlashAttention-1's forward (Dao et al., 2022, Algorithm 1) for a block of query rows
// of one (batch, head): the one definition of the CPU generic path and the faithful CUDA kernel.
//
// FA-1 keeps O, l and m in HBM and writes them back after every K/V block (the HbmState hook: O
// in the output format, normalized every step; l and m in the stats format). Per K/V block, for
// the rows that see at least one of its keys:
//   S_ij  = R_score(mul_in(score_accum, dot(q_i, k_j), scale_c))   (no multiply when the scale
//                                                                  is folded into Q)
//   BlockMergeSoftmax: begin_block (mt), probs (pt_ij = exp(S_ij - mt)), accumulate (lt), merge
//   pv_t  = sum_j R_prob(pt_ij) V_jt, from 0 in out_accum (the block's own product)
//   O_t   = state.o(update_o(O_t, pv_t)); m, l = state.m(m_new), state.l(l_new)
// At the end lse = m + log(l) (S already includes the scale); a row that saw nothing keeps
// O = 0 and gets lse = -inf.
//
// Under the framework model (FA-1 written with framework tensors, torch_attention.py's fa1) the
// same steps run with every op computed in fp32 and stored in its stage's format, and the two
// matmuls' outputs (Q K^T before the scale, the block's P V) stored before they are used.
//
// FA-1's loop nest is K/V blocks outer, Q blocks inner. Rows never interact, so running each
// group of rows through all K/V blocks in increasing order performs the same operations on each
// row in the same order: the same bits.
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
struct Flash1Work {
  using T = typename A::Value;
  BlockMergeSoftmax<A>* softmax;  // (rows) per-row statistics as stored between blocks
  int* count;                     // (rows) keys of the current block each row takes
  T* s;                           // (rows, ld_s >= Bc) S, then pt, then P of the current block
  int ld_s;
  T* o;  // (rows, ld_o >= d) O between blocks (FA-1's HBM copy); may be the output row itself
  int ld_o;
  T* pv;  // (rows, ld_o) the block's P V
};

// Rows [row_begin, row_end) of one (batch, head): writes o (rows, d) and lse (rows).
template <class A, class Kernels, class State = HbmState, class Mask = NoMask>
ATTNDEV_HD void flash1_rows(const A& a, const Kernels& kern, const State& state, const Params& p,
                            int row_begin, int row_end, Flash1Work<A> w, double* o, double* lse,
                            const Mask& mask = Mask{}) {
  using T = typename A::Value;
  const int rows = row_end - row_begin, d = p.head_dim;
  const T scale = static_cast<T>(p.score_scale);
  for (int r = 0; r < rows; ++r) {
    w.softmax[r] = BlockMergeSoftmax<A>{};
    for (int t = 0; t < w.ld_o; ++t) w.o[static_cast<long>(r) * w.ld_o + t] = T(0);
  }

  const int kv_end = visible_count(row_end - 1, p.seq_q, p.seq_kv, p.causal);
  for (int j0 = 0; j0 < kv_end; j0 += p.block_c) {
    for (int r = 0; r < rows; ++r)
      w.count[r] =
          mask.keys(row_begin + r, j0,
                    visible_in_block(row_begin + r, j0, p.block_c, p.seq_q, p.seq_kv, p.causal));
    kern.scores(a, row_begin, rows, j0, w.count, w.s, w.ld_s);
    for (int r = 0; r < rows; ++r) {
      const int n = w.count[r];
      if (n == 0) continue;
      T* s = w.s + static_cast<long>(r) * w.ld_s;  // (n)
      a.store_all(Stage::score_accum, s, n);       // QK^T as its matmul stores it (framework model)
      if (p.scale_scores)
        for (int j = 0; j < n; ++j) s[j] = a.mul(Stage::score_accum, s[j], scale);
      mask.scores(a, p, /*raw=*/false, row_begin + r, j0, s, n);
      a.round_all(Stage::score, s, n);
      BlockMergeSoftmax<A>& sm = w.softmax[r];
      if (!sm.begin_block(block_max(s, n))) {
        w.count[r] = 0;  // nothing visible is above -inf: the block adds nothing
        continue;
      }
      sm.probs(a, s, n);
      sm.accumulate(a, s, n);
      sm.merge(a);
      a.round_all(Stage::prob, s, n);
    }
    for (long e = 0; e < static_cast<long>(rows) * w.ld_o; ++e) w.pv[e] = T(0);
    kern.pv(a, w.s, w.ld_s, w.count, rows, j0, w.pv, w.ld_o);
    for (int r = 0; r < rows; ++r) {
      if (w.count[r] == 0) continue;
      BlockMergeSoftmax<A>& sm = w.softmax[r];
      T* o_r = w.o + static_cast<long>(r) * w.ld_o;
      T* pv_r = w.pv + static_cast<long>(r) * w.ld_o;
      a.store_all(Stage::out_accum, pv_r, w.ld_o);  // P V as its matmul stores it
      for (int t = 0; t < w.ld_o; ++t) o_r[t] = state.o(a, sm.update_o(a, o_r[t], pv_r[t]));
      sm.store(a, state);
    }
  }

  for (int r = 0; r < rows; ++r) {
    const T* o_state = w.o + static_cast<long>(r) * w.ld_o;
    double* o_r = o + static_cast<long>(r) * d;
    for (int t = 0; t < d; ++t) o_r[t] = static_cast<double>(o_state[t]);
    lse[r] = w.softmax[r].lse();
  }
}

}  // namespace attndev::attention::rows
