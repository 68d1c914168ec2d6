// Faithful flash1 / flash2 kernels: the CPU emulator's row functions
// (lib/attention/rows/flash1.hpp, flash2.hpp), the very same code, run by one thread per (batch,
// head, query row).
//
// These exist for bit-equality with attention::run, not for speed. A thread runs its row as a
// group of one row through every K/V block in increasing order, in double, rounding through the
// same lib/numerics calls (round_to, *_in, exp2_in), which are deterministic and compiled for the
// device. The translation unit is built with --fmad=false: nvcc would otherwise contract a*b+c
// in the TwoSum/rounding code and in any unfused multiply-add, and the results would drift from
// the host's in the last bit. Grouping rows differently from the CPU (Br) changes no bit: rows
// never interact (rows/flash2.hpp).
//
// Per-row state lives in global memory: the output row itself holds flash2's unnormalized
// accumulator (flash1's O between blocks), and `scratch` holds the row's block of scores (Bc)
// and, for flash1, its block's P V (d). The row functions are ATTNDEV_HD, so
// test/cuda/test_faithful_host.cpp runs these row entry points on the host as well.
#pragma once

#include <cstddef>

#include "attention/attention.hpp"
#include "attention/rows/flash1.hpp"
#include "attention/rows/flash2.hpp"
#include "attention/rows/scalar_kernels.hpp"
#include "numerics/host_device.hpp"

namespace attndev::cuda::faithful {

namespace rows = attention::rows;

// Everything a faithful kernel needs, by value (trivially copyable: it is a kernel argument).
struct Params {
  const double* q;  // (B, H, N_q, d), values in the policy's input format (Q pre-scaled under
                    // placement `query`)
  const double* k;  // (B, H, N_kv, d)
  const double* v;  // (B, H, N_kv, d)
  double* o;        // (B, H, N_q, d)
  double* lse;      // (B, H, N_q)
  double* scratch;  // (B, H, N_q, scratch_per_row(A, rows))
  int batch, heads;
  rows::Params rows;  // geometry, tile, mask, scales, policy: attention::Problem::row_params()
};

// Doubles of scratch per query row: the row's scores of one K/V block, and the block's P V
// where it is formed apart (flash1; flash2 under the framework model).
ATTNDEV_HD inline int scratch_per_row(attention::Algorithm a, const rows::Params& p) {
  const bool block_pv =
      a == attention::Algorithm::flash1 || p.policy.model == numerics::Model::framework;
  return p.block_c + (block_pv ? p.head_dim : 0);
}

// The (N, d) operands of head (b, h) for the row functions.
ATTNDEV_HD inline rows::ScalarKernels<rows::PolicyArith> head_kernels(const Params& p,
                                                                      std::size_t head) {
  const int d = p.rows.head_dim;
  return {p.q + head * p.rows.seq_q * d, p.k + head * p.rows.seq_kv * d,
          p.v + head * p.rows.seq_kv * d, d};
}

ATTNDEV_HD inline void flash2_row(const Params& p, int b, int h, int i) {
  using A = rows::PolicyArith;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const std::size_t row = head * p.rows.seq_q + i;
  const int d = p.rows.head_dim;
  double* o_i = p.o + row * d;  // (d): the unnormalized accumulator, then O
  double* s = p.scratch + row * scratch_per_row(attention::Algorithm::flash2, p.rows);  // (Bc)
  double* pv = s + p.rows.block_c;  // (d), framework model only (scratch_per_row)
  rows::OnlineSoftmax<A> softmax;
  int count = 0;
  const rows::Flash2Work<A> work{&softmax, &count, s, p.rows.block_c, o_i, d, pv};
  rows::flash2_rows(A{p.rows.policy}, head_kernels(p, head), rows::NoDequant{},
                    rows::RegisterState{}, p.rows, i, i + 1, work, o_i, p.lse + row);
}

ATTNDEV_HD inline void flash1_row(const Params& p, int b, int h, int i) {
  using A = rows::PolicyArith;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const std::size_t row = head * p.rows.seq_q + i;
  const int d = p.rows.head_dim;
  double* o_i = p.o + row * d;  // (d): FA-1's O between blocks ("HBM"), then O
  double* s = p.scratch + row * scratch_per_row(attention::Algorithm::flash1, p.rows);  // (Bc)
  double* pv = s + p.rows.block_c;                                                      // (d)
  rows::BlockMergeSoftmax<A> softmax;
  int count = 0;
  const rows::Flash1Work<A> work{&softmax, &count, s, p.rows.block_c, o_i, d, pv};
  rows::flash1_rows(A{p.rows.policy}, head_kernels(p, head), rows::HbmState{}, p.rows, i, i + 1,
                    work, o_i, p.lse + row);
}

#if defined(__CUDACC__)
template <attention::Algorithm A>
__global__ void faithful_kernel(Params p) {
  const long row = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long rows = static_cast<long>(p.batch) * p.heads * p.rows.seq_q;
  if (row >= rows) return;
  const int i = static_cast<int>(row % p.rows.seq_q);
  const int bh = static_cast<int>(row / p.rows.seq_q);
  if constexpr (A == attention::Algorithm::flash2)
    flash2_row(p, bh / p.heads, bh % p.heads, i);
  else
    flash1_row(p, bh / p.heads, bh % p.heads, i);
}
#endif

}  // namespace attndev::cuda::faithful
