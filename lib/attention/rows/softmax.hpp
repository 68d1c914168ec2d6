// The three softmax forms of the attention algorithms, each as a small struct whose named steps
// carry the -inf guards once (FlashAttention's hopper/softmax.h keeps its online softmax the same
// way). Every backend calls these steps: the CPU generic and SIMD paths through the row functions
// (rows/flash2.hpp, flash1.hpp, baseline.hpp), the faithful CUDA kernels through the same row
// functions, the cuBLAS baseline's softmax kernel through RowSoftmax's steps, flash2-tc's register
// tiles through OnlineSoftmax's (lib/cuda/flash2_tc.cuh, in fp32 with CUDA's exp2f).
//
//   OnlineSoftmax      FA-2: running max m and running sum l. The kernel form: p = exp2 with
//                      log2(e) folded into the scale, acc rescaled by alpha, one multiply by 1/l
//                      at the end. The tensor form (framework model): Algorithm 1 as written
//                      with framework tensors: scaled scores, exp, l = a*l + sum(p), O / l
//   BlockMergeSoftmax  FA-1 (Algorithm 1): each block's own max and sum, merged into the stored
//                      (m, l) with two exp factors; O renormalized every block
//   RowSoftmax         baseline: the whole row at once, max subtraction, division by the sum
//
// The one rule for rows without a usable score: a row none of whose visible scores is above -inf
// (it sees no key, or every score it sees is -inf, or NaN, which the max skips) has O = 0 and
// lse = -inf, in every algorithm and on every backend (docs/numerics.md).
#pragma once

#include <cmath>

#include "attention/rows/arith.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

template <class T>
ATTNDEV_HD constexpr T neg_inf() {
  return -static_cast<T>(INFINITY);
}

// max_j s[j] over n values, -inf for n == 0 (exact in any format: no rounding).
template <class T>
ATTNDEV_HD inline T block_max(const T* s, int n) {
  T m = neg_inf<T>();
  for (int j = 0; j < n; ++j) m = max_like_std(m, s[j]);
  return m;
}

// The sum of x[0..n) as PyTorch's CPU flash kernel adds a block's vector keys
// (_exp_reduce_sum_fusion_kernel in aten/src/ATen/native/cpu/FlashAttentionKernel.cpp; n a
// multiple of `lanes`, at most 16 lanes, `registers` 1 or 2):
//   the keys in groups of registers * lanes, key j added to lane j % lanes of running register
//   (j % group) / lanes, in increasing j (`registers` = 2 where P is stored in bf16/fp16: the
//   kernel then loads a VectorizedN<float, 2>, as wide as one Vectorized of the 16-bit type);
//   the keys past the last full group (one vector of `lanes`, or none) into a tail register;
//   register 0 += the tail register, then register 0 + register 1 lane by lane
//   (aten/src/ATen/cpu/vec/vec_n.h's vec_reduce_all combines a VectorizedN's registers first);
//   then the lanes reduced by halves, lane i + half added to lane i (vec_reduce_all's shuffles:
//   AVX2's 8 lanes a 128-bit permute, then 64- and 32-bit shuffles, each followed by an add;
//   AVX-512's 16 lanes 256- and 128-bit shuffles first; lane i meets lane i ^ half, which on lane
//   0's chain is i + half), so for 8 lanes and one register
//     ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)).
// With two registers and no tail, register 0 + register 1 is the first halving of 2 * lanes
// lanes, so the sum equals one register of twice the lanes. Every addition in where's compute
// format; 0 for n == 0.
template <class A, class W>
ATTNDEV_HD inline typename A::Value lane_sum(const A& a, W where, const typename A::Value* x, int n,
                                             int lanes, int registers = 1) {
  using T = typename A::Value;
  T acc[2][16];
  T tail[16];
  for (int i = 0; i < lanes; ++i) acc[0][i] = acc[1][i] = tail[i] = T(0);
  const int group = lanes * registers;
  const int grouped = n / group * group;
  for (int j = 0; j < grouped; ++j) {
    T& lane = acc[(j % group) / lanes][j % lanes];
    lane = a.add(where, lane, x[j]);
  }
  for (int j = grouped; j < n; ++j) tail[j % lanes] = a.add(where, tail[j % lanes], x[j]);
  for (int i = 0; i < lanes; ++i) {
    acc[0][i] = a.add(where, acc[0][i], tail[i]);
    if (registers == 2) acc[0][i] = a.add(where, acc[0][i], acc[1][i]);
  }
  for (int half = lanes / 2; half >= 1; half /= 2)
    for (int i = 0; i < half; ++i) acc[0][i] = a.add(where, acc[0][i], acc[0][i + half]);
  return acc[0][0];
}

// FA-2's online softmax of one query row (Dao 2023, Algorithm 1), in one of two forms.
// The kernel form (FA-2's CUDA kernel; scores raw, the scale folded into exp2). Per K/V block:
//   rescale     m_new = max(m, block max); alpha = exp2((m - m_new) * scale_log2); l *= alpha
//   probs       p_j = exp2(s_j * scale_log2 - m_new * scale_log2)   (one FFMA when fused)
//   accumulate  l += p_j in order (the stats-format p, before P is cast: FA-2's row sum)
//   rescale_o   acc *= alpha (before the block's P V joins it)
// and at the end finish (1/l; O = acc * (1/l)) and lse. A kernel whose row sum is split over
// threads (flash2-tc) runs rescale_max and merge_block_sum in place of rescale and accumulate.
// The tensor form (`tensors`: the framework model; scores already scaled, each step one tensor
// op whose output is stored, scripts/external/torch_attention.py's fa2):
//   rescale     m_new = max(m, block max); alpha = exp(m - m_new)
//   probs       p_j = exp(s_j - m_new)
//   accumulate  l = alpha * l + sum_j p_j      (the sum from 0: its own reduction)
//   (the caller: acc = alpha * acc + P V, the block's P V stored first)
// and at the end O = acc / l.
// The vector form (`lanes` > 0: PyTorch's CPU flash kernel, numerics::SoftmaxForm::
// torch_cpu_avx2 with 8 lanes or torch_cpu_avx512 with 16; scores already scaled, the kernel
// model, nothing stored between ops):
//   rescale     m_new = max(m, block max); alpha = exp(m - m_new)            (no l *= alpha)
//   probs       p_j = exp_u20(s_j - m_new) (fexp_u20 when `fast_exp`: P stored in bf16/fp16) for
//               the first `vector_count` keys of the block (its full groups of `lanes`),
//               libm's expf(s_j - m_new) for the rest (the scalar tail); alpha is libm's expf too
//   accumulate  the vector keys summed in `registers` x `lanes` running sums, combined and
//               reduced pairwise by halves (lane_sum), then the tail added in order:
//               l = block_sum + alpha * l   (a.mac: fused when policy.fma)
//   (the caller: acc = alpha * acc + P V, the block's P V formed apart) and O = acc * (1/l).
template <class A>
struct OnlineSoftmax {
  using T = typename A::Value;
  T scale_log2 = T(1);    // R_stats(scale * log2 e) (kernel form)
  T m = neg_inf<T>();     // running max of the raw (kernel) or scaled (tensor form) scores
  T l = T(0);             // running sum, stats format
  T alpha = T(0);         // the last rescale's factor
  T max_scaled = T(0);    // R_stats(m * scale_log2): the subtrahend of every p of the block
  bool tensors = false;   // the tensor form (above)
  int lanes = 0;          // > 0: the vector form (above), with this many lanes
  int vector_count = 0;   // vector form: keys of the current block in full groups of `lanes`
  bool fast_exp = false;  // vector form: fexp_u20 in the lanes (P stored in bf16/fp16), not exp_u20
  int registers = 1;      // vector form: running registers of the row sum (lane_sum)

  // Whether the scores reach rescale already multiplied by the scale (tensor and vector forms).
  ATTNDEV_HD bool scaled_scores() const { return tensors || lanes > 0; }

  // Returns false, changing nothing, while every score so far is -inf: the row has nothing to
  // add yet, and m_new - m_new would be -inf - -inf = NaN. alpha is 0 for the first block that
  // has a finite max (m == -inf; exp2(-inf) would also give 0, but the guard makes it explicit).
  ATTNDEV_HD bool rescale(const A& a, T block_max_score) {
    if (!rescale_max(a, block_max_score)) return false;
    if (!scaled_scores()) l = a.mul(Stage::stats, l, alpha);
    return true;
  }
  // rescale without its l *= alpha (the guard, m, max_scaled and alpha), for a kernel whose
  // threads each hold a share of the row sum and merge it with merge_block_sum (flash2-tc).
  ATTNDEV_HD bool rescale_max(const A& a, T block_max_score) {
    const T m_new = max_like_std(m, block_max_score);
    if (m_new == neg_inf<T>()) return false;
    if (lanes > 0) {  // the vector form: std::exp(m_old - m_new), libm's expf
      alpha = m == neg_inf<T>() ? T(0) : scalar_exp(a, a.sub(Stage::stats, m, m_new));
      m = m_new;
      return true;
    }
    if (scaled_scores()) {
      alpha = m == neg_inf<T>() ? T(0) : a.exp(Stage::stats, a.sub(Stage::stats, m, m_new));
      m = m_new;
      return true;
    }
    max_scaled = a.mul(Stage::stats, m_new, scale_log2);
    alpha =
        m == neg_inf<T>()
            ? T(0)
            : a.exp2(Stage::stats, a.mul(Stage::stats, a.sub(Stage::stats, m, m_new), scale_log2));
    m = m_new;
    return true;
  }
  ATTNDEV_HD T prob(const A& a, T s) const {
    return tensors ? prob_tensor_form(a, s) : prob_kernel_form(a, s);
  }
  // s[0..n) from raw scores to p, in place. The form is chosen once, outside the loop: a branch
  // per element keeps the loop from vectorizing on the fast path.
  ATTNDEV_HD void probs(const A& a, T* s, int n) const {
    if (lanes > 0) {
      const int nv = vector_count < n ? vector_count : n;
      for (int j = 0; j < nv; ++j) s[j] = prob_vector_lane(a, s[j]);
      for (int j = nv; j < n; ++j) s[j] = scalar_exp(a, a.sub(Stage::stats, s[j], m));
    } else if (tensors) {
      for (int j = 0; j < n; ++j) s[j] = prob_tensor_form(a, s[j]);
    } else {
      for (int j = 0; j < n; ++j) s[j] = prob_kernel_form(a, s[j]);
    }
  }
  ATTNDEV_HD T prob_kernel_form(const A& a, T s) const {
    return a.exp2(Stage::stats, a.mul_sub(Stage::stats, s, scale_log2, max_scaled));
  }
  ATTNDEV_HD T prob_tensor_form(const A& a, T s) const {
    return a.exp(Stage::stats, a.sub(Stage::stats, s, m));
  }
  // The vector form's scalar exp (the tail past the last full vector, the rescale factor): the
  // kernel's std::exp(float), libm's expf, rounded to the stats format (a no-op for fp32).
  ATTNDEV_HD T scalar_exp(const A& a, T x) const {
    return round_stats(a, static_cast<T>(numerics::libm_expf(static_cast<float>(x))));
  }
  // x as the stats stage stores it, for a model that rounds (flash2-tc's register arithmetic,
  // fp32 throughout, has no rounding step and never runs the vector form).
  ATTNDEV_HD static T round_stats(const A& a, T x) {
    if constexpr (requires { a.round(Stage::stats, x); }) {
      return a.round(Stage::stats, x);
    } else {
      return x;
    }
  }
  // exp_u20 of one lane: the float function, rounded once to the stats format (a no-op for the
  // presets' fp32 statistics).
  ATTNDEV_HD T prob_vector_lane(const A& a, T s) const {
    const float x = static_cast<float>(a.sub(Stage::stats, s, m));
    const float e = fast_exp ? numerics::fexp_u20_f32(x) : numerics::exp_u20_f32(x);
    return round_stats(a, static_cast<T>(e));
  }
  ATTNDEV_HD void accumulate(const A& a, const T* p, int n) {
    if (lanes > 0) {
      const int nv = vector_count < n ? vector_count : n;
      T block_sum = lane_sum(a, Held{Stage::stats}, p, nv, lanes, registers);
      for (int j = nv; j < n; ++j) block_sum = a.add(Held{Stage::stats}, block_sum, p[j]);
      l = a.mac(Stage::stats, block_sum, l, alpha);
      return;
    }
    if (tensors) {
      l = a.add(Stage::stats, a.mul(Stage::stats, alpha, l), sum_into(a, Stage::stats, T(0), p, n));
      return;
    }
    l = sum_into(a, Stage::stats, l, p, n);
  }
  // The kernel form with the row sum split over threads (flash2-tc: the four threads of a quad
  // share a row, each holding the p of its own columns), after rescale_max: this thread's p of
  // the block summed from 0 in column order (block_sum), then merged in one step,
  //   l = l * alpha + block_sum   (a.mac: one fused multiply-add when policy.fma)
  // in place of rescale's l *= alpha followed by accumulate. The quad's shares are added at the
  // end of the row, before finish.
  ATTNDEV_HD void merge_block_sum(const A& a, T block_sum) {
    l = a.mac(Stage::stats, block_sum, l, alpha);
  }
  ATTNDEV_HD void rescale_o(const A& a, T* acc, int n) const {
    for (int t = 0; t < n; ++t) acc[t] = rescaled_o(a, acc[t]);
  }
  // One element of rescale_o, for an accumulator that is not one contiguous row (register
  // fragments).
  ATTNDEV_HD T rescaled_o(const A& a, T o) const { return a.mul(Stage::out_accum, o, alpha); }
  // 1/l in the stats format; false for a row that never passed the rescale guard (l == 0):
  // O = 0 and lse = -inf, never 0/0.
  ATTNDEV_HD bool finish(const A& a, T& inv_l) const {
    if (l == T(0)) return false;
    inv_l = a.div(Stage::stats, T(1), l);
    return true;
  }
  // Natural-log lse of the scaled scores, in double (reporting): m is a raw score in the kernel
  // form, a scaled one in the tensor form.
  ATTNDEV_HD double lse(double lse_scale) const {
    return static_cast<double>(m) * (scaled_scores() ? 1.0 : lse_scale) +
           log(static_cast<double>(l));
  }
};

// FA-2's backward does not store P: it recomputes each p_ij from the forward's lse (Dao 2023,
// Algorithm 2) in the forward's exp2 form, the lse stored in the stats format and multiplied by
// log2 e there:
//   begin_row   lse2 = R_stats(R_stats(lse) * log2 e); false for a fully masked row (lse = -inf,
//               whose p are 0: never exp2(s * scale_log2 - -inf) = exp2(inf) or NaN)
//   prob        p_ij = exp2(s_ij * scale_log2 - lse2)   (one FFMA when fused, as the forward's)
// Before the final 1/l the forward's p and this one differ by exactly that division, which the
// lse absorbs.
template <class A>
struct RecomputedSoftmax {
  using T = typename A::Value;
  T scale_log2 = T(1);    // R_stats(scale * log2 e), the forward's
  T lse2 = neg_inf<T>();  // this row's lse in log2 units

  ATTNDEV_HD bool begin_row(const A& a, T lse) {
    lse2 = lse == neg_inf<T>()
               ? lse
               : a.mul(Stage::stats, a.round(Stage::stats, lse), static_cast<T>(numerics::kLog2e));
    return lse2 != neg_inf<T>();
  }
  ATTNDEV_HD T prob(const A& a, T s) const {
    return a.exp2(Stage::stats, a.mul_sub(Stage::stats, s, scale_log2, lse2));
  }
};

// FA-1's softmax of one query row (Dao et al. 2022, Algorithm 1, lines 9-13). m and l are the
// values stored between K/V blocks (the State hook rounds them, rows/hooks.hpp). Per block:
//   begin_block  mt = the block's max
//   probs        pt_j = exp(s_j - mt);  accumulate: lt = sum_j pt_j
//   merge        m_new = max(m, mt); f_old = exp(m - m_new); f_new = exp(mt - m_new);
//                l_new = f_old * l + f_new * lt
//   update_o     O_new = (l f_old O + f_new PV) / l_new   (O was stored normalized)
//   store        m = m_new, l = l_new through the State hook
template <class A>
struct BlockMergeSoftmax {
  using T = typename A::Value;
  T m = neg_inf<T>(), l = T(0);  // stored statistics, stats format
  T mt = T(0), lt = T(0);        // this block's
  T m_new = T(0), l_new = T(0), f_old = T(0), f_new = T(0), c_old = T(0);

  // False when the block has no score above -inf: it adds nothing, and s - mt would be NaN.
  ATTNDEV_HD bool begin_block(T block_max_score) {
    if (block_max_score == neg_inf<T>()) return false;
    mt = block_max_score;
    return true;
  }
  ATTNDEV_HD T prob(const A& a, T s) const {
    return a.exp(Stage::stats, a.sub(Stage::stats, s, mt));
  }
  ATTNDEV_HD void probs(const A& a, T* s, int n) const {
    for (int j = 0; j < n; ++j) s[j] = prob(a, s[j]);
  }
  ATTNDEV_HD void accumulate(const A& a, const T* p, int n) {
    lt = sum_into(a, Stage::stats, T(0), p, n);
  }
  // f_old is 0 for the row's first block (m == -inf): no exp(-inf - x) is evaluated.
  ATTNDEV_HD void merge(const A& a) {
    m_new = max_like_std(m, mt);
    f_old = m == neg_inf<T>() ? T(0) : a.exp(Stage::stats, a.sub(Stage::stats, m, m_new));
    f_new = a.exp(Stage::stats, a.sub(Stage::stats, mt, m_new));
    l_new = a.add(Stage::stats, a.mul(Stage::stats, f_old, l), a.mul(Stage::stats, f_new, lt));
    c_old = a.mul(Stage::stats, l, f_old);  // weights the stored, normalized O back
  }
  ATTNDEV_HD T update_o(const A& a, T o, T pv) const {
    const T num = a.add(Stage::out_accum, a.mul(Stage::out_accum, c_old, o),
                        a.mul(Stage::out_accum, f_new, pv));
    return a.div(Stage::out_accum, num, l_new);
  }
  template <class State>
  ATTNDEV_HD void store(const A& a, const State& state) {
    m = state.m(a, m_new);
    l = state.l(a, l_new);
  }
  // A row that saw nothing keeps l == 0: lse = -inf. m already includes the scale.
  ATTNDEV_HD double lse() const {
    return l == T(0) ? neg_inf<double>() : static_cast<double>(m) + log(static_cast<double>(l));
  }
};

// The baseline's softmax of one whole row: m = max_j s_j; e_j = exp(s_j - m); l = sum_j e_j;
// P_j = e_j / l. One op (a framework's softmax(-1)): every step is Held in the stats compute
// format and only P leaves it (R_prob, by softmax_row). Under the kernel model the compute format
// is the stats format itself.
template <class A>
struct RowSoftmax {
  using T = typename A::Value;
  // Where every step of the softmax is held (a function, not a static member: device code).
  ATTNDEV_HD static constexpr Held in() { return Held{Stage::stats}; }
  T m = neg_inf<T>(), l = T(0);

  ATTNDEV_HD void take_max(T s) { m = max_like_std(m, s); }
  // The guard (see the top of this file): false when no visible score is above -inf.
  ATTNDEV_HD bool has_max() const { return m != neg_inf<T>(); }
  ATTNDEV_HD T exp(const A& a, T s) const { return a.exp(in(), a.sub(in(), s, m)); }
  ATTNDEV_HD void accumulate(const A& a, const T* e, int n) { l = sum_into(a, in(), l, e, n); }
  // The same sum one term at a time, for a caller that recomputes e_j instead of keeping a row
  // (the cuBLAS baseline's softmax kernel): add_term for j = 0, 1, ..., then end_sum.
  ATTNDEV_HD void add_term(const A& a, T e) { l = a.add(in(), l, e); }
  ATTNDEV_HD void end_sum(const A& a) { l = a.store(in(), l); }
  ATTNDEV_HD T normalize(const A& a, T e) const { return a.div(in(), e, l); }
  ATTNDEV_HD double lse() const { return static_cast<double>(m) + log(static_cast<double>(l)); }
};

// RowSoftmax over a row held in memory, in place: s[0..n) holds the scores as stored on entry
// and P as stored (R_prob) on exit. Returns false (s untouched past the max) for a row the guard
// defines as O = 0.
template <class A>
ATTNDEV_HD inline bool softmax_row(const A& a, RowSoftmax<A>& sm, typename A::Value* s, int n) {
  for (int j = 0; j < n; ++j) sm.take_max(s[j]);
  if (!sm.has_max()) return false;
  for (int j = 0; j < n; ++j) s[j] = sm.exp(a, s[j]);  // e_j
  sm.accumulate(a, s, n);
  for (int j = 0; j < n; ++j) s[j] = sm.normalize(a, s[j]);
  a.round_all(Stage::prob, s, n);  // P as stored
  return true;
}

}  // namespace attndev::attention::rows
