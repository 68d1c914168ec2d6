// flash2: FlashAttention-2's forward (Dao, 2023) for a block of query rows of one (batch, head):
// the one definition the CPU generic path, the SIMD fast path, flash3-fp8 (through the Dequant
// hook) and the faithful CUDA kernel (a block of one row) all run.
//
// For each K/V block of Bc keys in increasing order, for the rows that see at least one of its
// keys (masked keys are never visited, rows/mask.hpp):
//   S_ij = R_score(dequant(dot(q_i, k_j)))      raw and unscaled: the scale lives in scale_log2
//   OnlineSoftmax: rescale (m, alpha, l *= alpha), probs (p_ij), accumulate (l += p_ij),
//                  rescale_o (acc *= alpha)
//   P_ij = R_prob(p_ij)                          the cast before the second mma
//   acc_t += P_ij V_jt over j (out_accum)        or, block-local: acc_t = merge(acc_t, P V)
//   the State hook: where m, l and acc are kept between blocks (FA-2: registers)
// End of row: l == 0 -> O = 0, lse = -inf; else O_t = R_output(acc_t * R_stats(1 / l)),
// lse = m * scale + log(l) in double.
//
// Under the framework model the row runs FA-2's Algorithm 1 as a loop over framework tensors
// (OnlineSoftmax's tensor form; torch_attention.py's fa2), every op's output stored:
//   S_ij = store(R_score_accum-as-stored(dot) * scale_c)     the matmul's output, then S * scale
//   OnlineSoftmax (tensor form): m_new, alpha = exp(m - m_new), p = exp(S - m_new),
//                                l = alpha * l + sum(p)
//   acc_t = alpha * acc_t + store(sum_j P_ij V_jt)            the block's P V formed apart
//   O_t = R_output(acc_t / l)
// so m, l and acc are rounded to their stored formats once per K/V block.
//
// A row that sees no key of a block is left untouched by it. A kernel instead runs the block
// with -inf scores, which leaves m unchanged and rescales by exp2(0): the same values, because
// exp2_in(stats, 0) == 1 exactly (pinned in test_known_answers.cpp).
//
// The K/V loop stops at the last key the block's last row sees; rows never interact, so the
// results do not depend on how rows are grouped (Br): the CUDA kernel runs groups of one row.
#pragma once

#include "attention/rows/arith.hpp"
#include "attention/rows/hooks.hpp"
#include "attention/rows/mask.hpp"
#include "attention/rows/mask_hook.hpp"
#include "attention/rows/params.hpp"
#include "attention/rows/softmax.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

// Scratch of one call, owned by the caller (vectors on the CPU, a row's slice of global scratch
// on the GPU). `rows` = row_end - row_begin.
template <class A>
struct Flash2Work {
  using T = typename A::Value;
  OnlineSoftmax<A>* softmax;  // (rows) per-row state, set up by flash2_rows
  int* count;                 // (rows) keys of the current block each row takes
  T* s;                       // (rows, ld_s >= Bc) S, then p, then P of the current block
  int ld_s;
  T* acc;  // (rows, ld_acc >= d) unnormalized O; may be the output row itself (T = double)
  int ld_acc;
  T* pv;  // (rows, ld_acc) the block's P V, only with Dequant::kBlockLocalPv, the framework
          // model or the vector form (else unused)
  int* chunk_count = nullptr;  // (rows) the vector form only: keys of one k-block of the P V gemm
};

// The k-blocks of PyTorch's CPU P V gemm (cpublas::gemm, bf16/fp16 operands into an fp32 dst with
// beta = 1, MKL underneath), measured with crafted inputs (docs/numerics.md): a block of k keys
// is summed in one piece up to 192 keys, in two halves (the first floor(k/2)) up to 384, and in
// pieces of 192 (the last the remainder) beyond; each piece is summed from 0 in key order and
// added to dst in turn. Returns the end of the piece that starts at `begin`.
ATTNDEV_HD inline int torch_cpu_pv_piece_end(int k, int begin) {
  constexpr int kPiece = 192;
  if (k <= kPiece) return k;
  if (k <= 2 * kPiece) return begin == 0 ? k / 2 : k;
  return begin + kPiece < k ? begin + kPiece : k;
}

// Rows [row_begin, row_end) of one (batch, head): writes o (rows, d) and lse (rows).
template <class A, class Kernels, class Dequant, class State = RegisterState, class Mask = NoMask>
ATTNDEV_HD void flash2_rows(const A& a, const Kernels& kern, const Dequant& dequant,
                            const State& state, const Params& p, int row_begin, int row_end,
                            Flash2Work<A> w, double* o, double* lse, const Mask& mask = Mask{}) {
  using T = typename A::Value;
  const int rows = row_end - row_begin, d = p.head_dim;
  const bool tensors = p.policy.model == numerics::Model::framework;
  // The block's P V formed apart and merged: fp8's per-block V scale, or a framework's matmul
  // output stored before it joins the accumulator.
  // PyTorch's CPU kernel (SoftmaxForm::torch_cpu_avx2 / avx512): the vector form of
  // OnlineSoftmax in that build's lanes, scores scaled before the max, and the block's P V a gemm
  // of its own added to O (beta = 1). The fp8 algorithms (a Dequant with per-block V scales)
  // model FA-3 and ignore the form.
  const int lanes = Dequant::kBlockLocalPv ? 0 : numerics::torch_cpu_lanes(p.policy.softmax);
  const bool vector_form = lanes > 0;
  const bool block_local = Dequant::kBlockLocalPv || tensors || vector_form;
  const T scale = static_cast<T>(p.score_scale);
  for (int r = 0; r < rows; ++r) {
    w.softmax[r] = OnlineSoftmax<A>{};
    w.softmax[r].tensors = tensors;
    w.softmax[r].lanes = lanes;
    // The kernel's lanes evaluate fexp_u20 where P is stored in a 16-bit format, exp_u20 where
    // it stays fp32 (its fp32 instantiation).
    w.softmax[r].fast_exp = vector_form && (p.policy.prob == numerics::Format::bf16 ||
                                            p.policy.prob == numerics::Format::fp16);
    // With P in a 16-bit format the kernel sums in two registers (a VectorizedN<float, 2>).
    w.softmax[r].registers = w.softmax[r].fast_exp ? 2 : 1;
    w.softmax[r].scale_log2 = static_cast<T>(p.scale_log2);
    for (int t = 0; t < w.ld_acc; ++t) w.acc[static_cast<long>(r) * w.ld_acc + t] = T(0);
  }

  const int kv_end = visible_count(row_end - 1, p.seq_q, p.seq_kv, p.causal);
  for (int j0 = 0; j0 < kv_end; j0 += p.block_c) {
    for (int r = 0; r < rows; ++r)
      w.count[r] =
          mask.keys(row_begin + r, j0,
                    visible_in_block(row_begin + r, j0, p.block_c, p.seq_q, p.seq_kv, p.causal));
    kern.scores(a, row_begin, rows, j0, w.count, w.s, w.ld_s);
    // The vector form's groups of lanes start at the block's first key and cover its full
    // width, masked keys included (the kernel sets their scores to -inf; their p are 0 and add
    // nothing): the keys past the last full group are the scalar tail, so which keys get the
    // scalar exp depends on the build's lanes (a block of 440 keys: none with 8, 8 with 16).
    const int block_keys = p.seq_kv - j0 < p.block_c ? p.seq_kv - j0 : p.block_c;
    const int vector_keys = vector_form ? block_keys / lanes * lanes : 0;
    for (int r = 0; r < rows; ++r) {
      const int n = w.count[r];
      if (n == 0) continue;
      T* s = w.s + static_cast<long>(r) * w.ld_s;  // (n)
      a.store_all(Stage::score_accum, s, n);       // QK^T as its matmul stores it (framework model)
      dequant.scores(a, row_begin + r, j0, s, n);
      if ((tensors || vector_form) && p.scale_scores)
        for (int j = 0; j < n; ++j) s[j] = a.mul(Stage::score_accum, s[j], scale);
      mask.scores(a, p, /*raw=*/!tensors && !vector_form && p.scale_scores, row_begin + r, j0, s,
                  n);
      a.round_all(Stage::score, s, n);
      OnlineSoftmax<A>& sm = w.softmax[r];
      sm.vector_count = vector_keys;
      if (!sm.rescale(a, block_max(s, n))) {
        w.count[r] = 0;  // every score so far is -inf: the block adds nothing to this row
        continue;
      }
      sm.probs(a, s, n);
      sm.accumulate(a, s, n);
      if (!block_local) sm.rescale_o(a, w.acc + static_cast<long>(r) * w.ld_acc, w.ld_acc);
      a.round_all(Stage::prob, s, n);
    }
    if (vector_form) {
      // dst = dst * alpha (alpha = 0 on a row's first block: the gemm's beta = 0), then each
      // k-piece of the block's P V, formed from 0, added to it in turn.
      for (int r = 0; r < rows; ++r)
        if (w.count[r] != 0)
          w.softmax[r].rescale_o(a, w.acc + static_cast<long>(r) * w.ld_acc, w.ld_acc);
      for (int c0 = 0; c0 < block_keys; c0 = torch_cpu_pv_piece_end(block_keys, c0)) {
        const int c1 = torch_cpu_pv_piece_end(block_keys, c0);
        for (int r = 0; r < rows; ++r) {
          const int n = w.count[r] < c1 ? w.count[r] : c1;
          w.chunk_count[r] = n > c0 ? n - c0 : 0;
        }
        for (long e = 0; e < static_cast<long>(rows) * w.ld_acc; ++e) w.pv[e] = T(0);
        kern.pv(a, w.s + c0, w.ld_s, w.chunk_count, rows, j0 + c0, w.pv, w.ld_acc);
        for (int r = 0; r < rows; ++r) {
          if (w.chunk_count[r] == 0) continue;  // a piece of masked keys only adds +0
          T* acc_r = w.acc + static_cast<long>(r) * w.ld_acc;
          const T* pv_r = w.pv + static_cast<long>(r) * w.ld_acc;
          for (int t = 0; t < w.ld_acc; ++t) acc_r[t] = a.add(Stage::out_accum, acc_r[t], pv_r[t]);
        }
      }
    } else if (block_local) {
      for (long e = 0; e < static_cast<long>(rows) * w.ld_acc; ++e) w.pv[e] = T(0);
      kern.pv(a, w.s, w.ld_s, w.count, rows, j0, w.pv, w.ld_acc);
      for (int r = 0; r < rows; ++r) {
        if (w.count[r] == 0) continue;
        T* acc_r = w.acc + static_cast<long>(r) * w.ld_acc;
        T* pv_r = w.pv + static_cast<long>(r) * w.ld_acc;
        a.store_all(Stage::out_accum, pv_r, w.ld_acc);  // P V as its matmul stores it
        for (int t = 0; t < w.ld_acc; ++t)
          acc_r[t] = dequant.merge_pv(a, a.mul(Stage::out_accum, acc_r[t], w.softmax[r].alpha),
                                      pv_r[t], j0);
      }
    } else {
      kern.pv(a, w.s, w.ld_s, w.count, rows, j0, w.acc, w.ld_acc);
    }
    for (int r = 0; r < rows; ++r) {
      if (w.count[r] == 0) continue;
      OnlineSoftmax<A>& sm = w.softmax[r];
      sm.m = state.m(a, sm.m);
      sm.l = state.l(a, sm.l);
      T* acc_r = w.acc + static_cast<long>(r) * w.ld_acc;
      for (int t = 0; t < w.ld_acc; ++t) acc_r[t] = state.o(a, acc_r[t]);
    }
  }

  for (int r = 0; r < rows; ++r) {
    const OnlineSoftmax<A>& sm = w.softmax[r];
    T* acc_r = w.acc + static_cast<long>(r) * w.ld_acc;
    double* o_r = o + static_cast<long>(r) * d;
    if (sm.l == T(0)) {  // the row never passed the rescale guard: O = 0, lse = -inf
      for (int t = 0; t < d; ++t) o_r[t] = 0.0;
      lse[r] = neg_inf<double>();
      continue;
    }
    if (tensors) {
      for (int t = 0; t < d; ++t) acc_r[t] = a.div(Stage::out_accum, acc_r[t], sm.l);  // O / l
    } else {
      T inv_l;
      sm.finish(a, inv_l);
      for (int t = 0; t < d; ++t) acc_r[t] = a.mul(Stage::out_accum, acc_r[t], inv_l);
    }
    a.round_all(Stage::output, acc_r, d);
    for (int t = 0; t < d; ++t) o_r[t] = static_cast<double>(acc_r[t]);
    lse[r] = sm.lse(p.lse_scale);
  }
}

}  // namespace attndev::attention::rows
