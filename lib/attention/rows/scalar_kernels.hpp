// The reference QK^T and PV products of the row functions: plain loops in the arithmetic model A
// over the row-major (N, d) operands of one (batch, head). The generic CPU path, the fp8
// algorithms and the faithful CUDA kernels use them; the SIMD fast path has vectorized versions
// with the same interface (attention/kernels.hpp) that keep every sum in the same order:
//   a dot product runs over t = 0, 1, ..., d-1, a P V sum over j = 0, 1, ... (increasing keys).
#pragma once

#include "attention/rows/arith.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

template <class A>
struct ScalarKernels {
  using T = typename A::Value;
  const T* q;  // (N_q, d)
  const T* k;  // (N_kv, d)
  const T* v;  // (N_kv, d)
  int d;

  // s(r, j) = dot(q_{row_begin + r}, k_{j0 + j}) for j < n[r], accumulated in score_accum; the
  // raw dot products, before any scale or rounding to the score format.
  ATTNDEV_HD void scores(const A& a, int row_begin, int rows, int j0, const int* n, T* s,
                         int ld_s) const {
    for (int r = 0; r < rows; ++r) {
      const T* q_i = q + static_cast<long>(row_begin + r) * d;
      for (int j = 0; j < n[r]; ++j) {
        const T* k_j = k + static_cast<long>(j0 + j) * d;
        T acc = T(0);
        for (int t = 0; t < d; ++t) acc = a.mac(Stage::score_accum, acc, q_i[t], k_j[t]);
        s[static_cast<long>(r) * ld_s + j] = acc;
      }
    }
  }

  // acc(r, t) += sum over j < count[r] of p(r, j) * v_{j0 + j, t}, accumulated in out_accum.
  ATTNDEV_HD void pv(const A& a, const T* p, int ld_p, const int* count, int rows, int j0, T* acc,
                     int ld_acc) const {
    for (int r = 0; r < rows; ++r) {
      const T* p_r = p + static_cast<long>(r) * ld_p;
      T* acc_r = acc + static_cast<long>(r) * ld_acc;
      for (int j = 0; j < count[r]; ++j) {
        const T* v_j = v + static_cast<long>(j0 + j) * d;
        for (int t = 0; t < d; ++t) acc_r[t] = a.mac(Stage::out_accum, acc_r[t], p_r[j], v_j[t]);
      }
    }
  }
};

}  // namespace attndev::attention::rows
