// Faithful kernels, the emulated twins on the device: the CPU emulator's row functions
// (lib/attention/rows/flash1.hpp, flash2.hpp, baseline.hpp), the very same code, run by one thread
// per (batch, head, query row). The baseline runs its streamed form (baseline_row_streamed: the
// row's scores recomputed per pass instead of held), which under the fp64 policy is the FP64
// golden on the device.
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
// accumulator (flash1's O between blocks, the baseline's P V sums), and `scratch` holds the row's
// block of scores (Bc) and, where the block's P V is formed apart, that product (d). The row
// functions and the kernel body are ATTNDEV_HD, so test/cuda/test_faithful_host.cpp and
// test_device_twins.cpp run them on the host as well, for every thread of a launch.
#pragma once

#include <cstddef>

#include "attention/attention.hpp"
#include "attention/fp8_dequant.hpp"
#include "attention/rows/baseline.hpp"
#include "attention/rows/flash1.hpp"
#include "attention/rows/flash2.hpp"
#include "attention/rows/scalar_kernels.hpp"
#include "cuda/faithful_scratch.hpp"
#include "cuda/grid.hpp"
#include "numerics/host_device.hpp"

namespace attndev::cuda::faithful {

namespace rows = attention::rows;

// Threads per block of the launch (one query row each): deep double-precision call chains, so
// small blocks keep register spills cheap.
inline constexpr unsigned kThreadsPerBlock = 64;

// Everything a faithful kernel needs, by value (trivially copyable: it is a kernel argument).
struct Params {
  const double* q;  // (B, H, N_q, d), values in the policy's input format (Q pre-scaled under
                    // placement `query`)
  const double* k;  // (B, H, N_kv, d)
  const double* v;  // (B, H, N_kv, d)
  double* o;        // (B, H, N_q, d)
  double* lse;      // (B, H, N_q)
  double* scratch;  // (B, H, N_q, scratch_per_row(A, rows))
  int* counts;      // (B, H, N_q) flash2's vector form: keys of one k-piece of a block's P V
  int batch, heads;
  rows::Params rows;  // geometry, tile, mask, scales, policy: attention::Problem::row_params()
  // The fp8 algorithms: q, k, v above hold the e4m3 values, these their block scales (the host's
  // prepare_fp8 made both; fp8_dequant.hpp reads them).
  attention::fp8::ScaleView q_scale, k_scale, v_scale;
};

// The (N, d) operands of head (b, h) for the row functions.
ATTNDEV_HD inline rows::ScalarKernels<rows::PolicyArith> head_kernels(const Params& p,
                                                                      std::size_t head) {
  const int d = p.rows.head_dim;
  return {p.q + head * p.rows.seq_q * d, p.k + head * p.rows.seq_kv * d,
          p.v + head * p.rows.seq_kv * d, d};
}

// flash2's row function with a Dequant hook (NoDequant; the fp8 algorithms' Fp8Dequant), for the
// algorithm A whose scratch the launcher allocated.
template <class Dequant>
ATTNDEV_HD void flash2_row_with(const Params& p, attention::Algorithm algorithm, int b, int h,
                                int i, const Dequant& dequant) {
  using A = rows::PolicyArith;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const std::size_t row = head * p.rows.seq_q + i;
  const int d = p.rows.head_dim;
  double* o_i = p.o + row * d;                                       // (d): the accumulator, then O
  double* s = p.scratch + row * scratch_per_row(algorithm, p.rows);  // (Bc)
  double* pv = s + p.rows.block_c;  // (d), block-local P V only (scratch_per_row)
  rows::OnlineSoftmax<A> softmax;
  int count = 0;
  // counts: the vector forms' per-row k-block counts; launches without one pass null (no offset
  // may be applied to a null pointer).
  int* const chunk_count = p.counts ? p.counts + row : nullptr;
  const rows::Flash2Work<A> work{&softmax, &count, s, p.rows.block_c, o_i, d, pv, chunk_count};
  rows::flash2_rows(A{p.rows.policy}, head_kernels(p, head), dequant, rows::RegisterState{}, p.rows,
                    i, i + 1, work, o_i, p.lse + row);
}

ATTNDEV_HD inline void flash2_row(const Params& p, int b, int h, int i) {
  flash2_row_with(p, attention::Algorithm::flash2, b, h, i, rows::NoDequant{});
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

// The streamed baseline: its P V sums accumulate in the output row (double, the model's Value).
template <class Dequant>
ATTNDEV_HD void baseline_row_with(const Params& p, int b, int h, int i, const Dequant& dequant) {
  using A = rows::PolicyArith;
  const std::size_t head = static_cast<std::size_t>(b) * p.heads + h;
  const std::size_t row = head * p.rows.seq_q + i;
  double* o_i = p.o + row * p.rows.head_dim;  // (d)
  rows::baseline_row_streamed(A{p.rows.policy}, head_kernels(p, head), dequant, p.rows, i, o_i, o_i,
                              p.lse + row);
}

// The fp8 algorithms' hook for head (b, h).
ATTNDEV_HD inline attention::detail::Fp8Dequant fp8_dequant(const Params& p, int b, int h) {
  return {p.q_scale, p.k_scale, p.v_scale, b, h};
}

// Rows of the launch: one thread per (batch, head, query row), in that order.
ATTNDEV_HD inline std::size_t row_count(const Params& p) {
  return static_cast<std::size_t>(p.batch) * p.heads * p.rows.seq_q;
}

// The kernel body: thread t's row through algorithm A's row function.
template <attention::Algorithm A>
ATTNDEV_HD void row_body(const Params& p, ThreadIndex t) {
  const std::size_t row = t.global_x();
  if (row >= row_count(p)) return;
  const int i = static_cast<int>(row % static_cast<std::size_t>(p.rows.seq_q));
  const std::size_t bh = row / static_cast<std::size_t>(p.rows.seq_q);
  const int b = static_cast<int>(bh / static_cast<std::size_t>(p.heads));
  const int h = static_cast<int>(bh % static_cast<std::size_t>(p.heads));
  if constexpr (A == attention::Algorithm::flash2)
    flash2_row(p, b, h, i);
  else if constexpr (A == attention::Algorithm::flash1)
    flash1_row(p, b, h, i);
  else if constexpr (A == attention::Algorithm::baseline)
    baseline_row_with(p, b, h, i, rows::NoDequant{});
  else if constexpr (A == attention::Algorithm::baseline_fp8)
    baseline_row_with(p, b, h, i, fp8_dequant(p, b, h));
  else {  // flash3-fp8 and its ablations: flash2 on the e4m3 values (fp8_attention.cpp)
    static_assert(attention::is_fp8_algorithm(A), "select_twin launches no other algorithm");
    flash2_row_with(p, A, b, h, i, fp8_dequant(p, b, h));
  }
}

#if defined(__CUDACC__)
template <attention::Algorithm A>
__global__ void faithful_kernel(Params p) {
  row_body<A>(p, this_thread());
}
#endif

}  // namespace attndev::cuda::faithful
