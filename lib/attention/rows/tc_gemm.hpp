// The row functions' QK^T and P V on a tensor-core profile (numerics/mma.hpp): the interface of
// ScalarKernels (rows/scalar_kernels.hpp), each dot product a chain of the profile's fused
// dot-adds instead of a chain of FMAs, in the kernel's own k order:
//   QK^T  s(r, j) = dot over t = 0, 1, ..., d-1 from C = 0 (k16 / k32 / k8 instructions along d)
//   P V   acc(r, t) = dot over the block's keys j = 0, 1, ..., count-1 with C = acc(r, t), the
//         running accumulator (already rescaled by the caller: FA-2 multiplies O by alpha before
//         the block's P V mma joins it)
// A block's instructions start at its first key (Bc is a multiple of every instruction's k in a
// real kernel); keys past a row's count are masked, P = 0 there, and zero products take no part
// in a dot-add, so stopping at the count is what the padded instruction computes.
// Both accumulators are fp32 (numerics::mma_policy_error refuses anything else), so the results
// need no further rounding for score_accum / out_accum.
#pragma once

#include <cstddef>

#include "attention/rows/arith.hpp"
#include "numerics/host_device.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::rows {

template <class A>
struct TcKernels {
  using T = typename A::Value;
  const T* q;  // (N_q, d)
  const T* k;  // (N_kv, d)
  const T* v;  // (N_kv, d)
  int d;
  numerics::mma::DotFunction qk_dot;  // the profile of input x input
  numerics::mma::Operands qk_operands;
  numerics::mma::DotFunction pv_dot;  // the profile of prob x input
  numerics::mma::Operands pv_operands;

  void scores(const A&, int row_begin, int rows, int j0, const int* n, T* s, int ld_s) const {
    for (int r = 0; r < rows; ++r) {
      const T* q_i = q + static_cast<long>(row_begin + r) * d;  // (d)
      for (int j = 0; j < n[r]; ++j) {
        const T* k_j = k + static_cast<long>(j0 + j) * d;  // (d)
        s[static_cast<long>(r) * ld_s + j] =
            qk_dot(qk_operands, q_i, 1, k_j, 1, d, 0.0, numerics::mma::Output::fp32);
      }
    }
  }

  // acc(r, t) += the block's P V through the profile, C = acc(r, t).
  void pv(const A&, const T* p, int ld_p, const int* count, int rows, int j0, T* acc,
          int ld_acc) const {
    for (int r = 0; r < rows; ++r) {
      const T* p_r = p + static_cast<long>(r) * ld_p;  // (count[r])
      T* acc_r = acc + static_cast<long>(r) * ld_acc;  // (d)
      if (count[r] == 0) continue;
      const T* v_block = v + static_cast<long>(j0) * d;  // (count[r], d), column t strided by d
      for (int t = 0; t < d; ++t)
        acc_r[t] = pv_dot(pv_operands, p_r, 1, v_block + t, d, count[r], acc_r[t],
                          numerics::mma::Output::fp32);
    }
  }
};

// The tensor-core kernels of a policy whose mma names an architecture (the policy was checked
// by numerics::mma_policy_error: both pairs have a profile). Host only (function pointers).
template <class A>
inline TcKernels<A> tc_kernels(const numerics::PrecisionPolicy& policy, const double* q,
                               const double* k, const double* v, int d) {
  namespace mma = numerics::mma;
  mma::Kind qk_kind{}, pv_kind{};
  mma::kind_of(policy.input, policy.input, qk_kind);
  mma::kind_of(policy.prob, policy.input, pv_kind);
  const mma::Instruction ins = mma::default_instruction(policy.mma);
  return {q,
          k,
          v,
          d,
          mma::dot_function(policy.mma, ins, qk_kind),
          mma::operands(policy.input, policy.input),
          mma::dot_function(policy.mma, ins, pv_kind),
          mma::operands(policy.prob, policy.input)};
}

}  // namespace attndev::attention::rows
