// The generic path's drivers: one work item (a block of query rows of one (batch, head)) through
// a row function of rows/ in PolicyArith with the scalar kernels, its scratch in vectors. The
// plain algorithms pass their problem's tensors and NoDequant; the fp8 algorithms pass the e4m3
// tensors and their Fp8Dequant (fp8_dequant.hpp), so both run the same loops.
#pragma once

#include <cstddef>
#include <vector>

#include "attention/detail.hpp"
#include "attention/mask.hpp"
#include "attention/rows/baseline.hpp"
#include "attention/rows/flash1.hpp"
#include "attention/rows/flash2.hpp"
#include "attention/rows/scalar_kernels.hpp"
#include "attention/rows/tc_gemm.hpp"

namespace attndev::attention::detail {

// First element of the (rows, d) block of O and of the rows of lse that a work item writes.
inline double* o_rows(Output& out, const RowBlock& rb) {
  return out.o.head_ptr(rb.b, rb.h) + static_cast<std::size_t>(rb.row_begin) * out.o.cols;
}
inline double* lse_rows(Output& out, const RowBlock& rb) {
  return out.lse.data() + (static_cast<std::size_t>(rb.b) * out.o.heads + rb.h) * out.o.rows +
         rb.row_begin;
}

inline rows::ScalarKernels<rows::PolicyArith> scalar_kernels(const Tensor& q, const Tensor& k,
                                                             const Tensor& v, const RowBlock& rb) {
  return {q.head_ptr(rb.b, rb.h), k.head_ptr(rb.b, rb.h), v.head_ptr(rb.b, rb.h), q.cols};
}

// Calls visit(kernels) with the GEMMs the policy asks for: FMA chains (ScalarKernels), or the
// tensor-core profile of policy.mma (TcKernels). The one place the generic path chooses.
template <class Visit>
void with_kernels(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                  const RowBlock& rb, Visit&& visit) {
  if (p.policy.mma == numerics::mma::Arch::none) {
    visit(scalar_kernels(q, k, v, rb));
  } else {
    visit(rows::tc_kernels<rows::PolicyArith>(
        p.policy, q.head_ptr(rb.b, rb.h), k.head_ptr(rb.b, rb.h), v.head_ptr(rb.b, rb.h), q.cols));
  }
}

template <class Dequant>
void flash2_generic_rows(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Dequant& dequant, const RowBlock& rb, Output& out) {
  using A = rows::PolicyArith;
  const std::size_t rows = static_cast<std::size_t>(rb.row_end - rb.row_begin);
  const int d = p.shape.head_dim;
  std::vector<rows::OnlineSoftmax<A>> softmax(rows);
  std::vector<int> count(rows);
  std::vector<double> s(rows * p.block_c);  // (Br, Bc)
  std::vector<double> acc(rows * d);        // (Br, d)
  const bool block_local = Dequant::kBlockLocalPv || p.policy.model == numerics::Model::framework ||
                           numerics::torch_cpu_lanes(p.policy.softmax) > 0;
  std::vector<double> pv(block_local ? rows * d : 0);
  std::vector<int> chunk_count(rows);
  const rows::Flash2Work<A> work{softmax.data(), count.data(),      s.data(),
                                 p.block_c,      acc.data(),        d,
                                 pv.data(),      chunk_count.data()};
  with_kernels(p, q, k, v, rb, [&](const auto& kernels) {
    rows::flash2_rows(A{p.policy}, kernels, dequant, rows::RegisterState{}, p.row_params(),
                      rb.row_begin, rb.row_end, work, o_rows(out, rb), lse_rows(out, rb),
                      key_mask(p.mask.get(), rb.b, rb.h));
  });
}

inline void flash1_generic_rows(const Problem& p, const RowBlock& rb, Output& out) {
  using A = rows::PolicyArith;
  const std::size_t rows = static_cast<std::size_t>(rb.row_end - rb.row_begin);
  const int d = p.shape.head_dim;
  std::vector<rows::BlockMergeSoftmax<A>> softmax(rows);
  std::vector<int> count(rows);
  std::vector<double> s(rows * p.block_c);  // (Br, Bc)
  std::vector<double> o(rows * d);          // (Br, d) FA-1's O between blocks
  std::vector<double> pv(rows * d);         // (Br, d)
  const rows::Flash1Work<A> work{softmax.data(), count.data(), s.data(), p.block_c, o.data(), d,
                                 pv.data()};
  with_kernels(p, p.q, p.k, p.v, rb, [&](const auto& kernels) {
    rows::flash1_rows(A{p.policy}, kernels, rows::HbmState{}, p.row_params(), rb.row_begin,
                      rb.row_end, work, o_rows(out, rb), lse_rows(out, rb),
                      key_mask(p.mask.get(), rb.b, rb.h));
  });
}

template <class Dequant>
void baseline_generic_rows(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Dequant& dequant, const RowBlock& rb, Output& out) {
  using A = rows::PolicyArith;
  const std::size_t rows = static_cast<std::size_t>(rb.row_end - rb.row_begin);
  const int d = p.shape.head_dim, n_kv = p.shape.seq_kv;
  std::vector<rows::RowSoftmax<A>> softmax(rows);
  std::vector<int> count(rows);
  std::vector<double> s(rows * n_kv);  // (rows, N_kv)
  std::vector<double> acc(rows * d);   // (rows, d)
  const rows::BaselineWork<A> work{softmax.data(), count.data(), s.data(), n_kv, acc.data(), d};
  with_kernels(p, q, k, v, rb, [&](const auto& kernels) {
    rows::baseline_rows(A{p.policy}, kernels, dequant, p.row_params(), rb.row_begin, rb.row_end,
                        work, o_rows(out, rb), lse_rows(out, rb),
                        key_mask(p.mask.get(), rb.b, rb.h));
  });
}

}  // namespace attndev::attention::detail
