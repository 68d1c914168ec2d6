// Row and element kernels of the cuBLAS baseline: the softmax between its two GEMMs, which
// rounds at the policy's stages with the emulator's own steps (rows::scale_score, RowSoftmax in
// lib/attention/rows/), and the output rounding.
//
// Only the two GEMMs differ from the emulator (cuBLAS sums in its own blocked order); everything
// between and after them is the emulator's arithmetic through lib/numerics, one thread per row
// with the row sum in increasing j, so a deviation between the two backends is attributable to
// the matrix products alone. softmax_row_from_dots is ATTNDEV_HD and free of CUDA types, so
// test/cuda/test_faithful_host.cpp runs it on the host against the emulator.
#pragma once

#include <cstddef>

#include "attention/rows/baseline.hpp"
#include "attention/rows/mask.hpp"
#include "attention/rows/softmax.hpp"
#include "numerics/host_device.hpp"
#include "numerics/policy.hpp"
#if defined(__CUDACC__)
#include "cuda/convert.cuh"
#endif

namespace attndev::cuda::baseline {

namespace rows = attention::rows;

// One query row i: the GEMM's raw dot products (N_kv, accumulator type Acc) -> P through
// put(j, P_ij) for every j < N_kv (0 for masked keys), and its lse. S_ij is recomputed from the
// dot product in each pass instead of kept (a thread has no room for a row of N_kv doubles): the
// same operations each time, so the same bits as the emulator's baseline, which keeps it.
template <class Acc, class Put>
ATTNDEV_HD void softmax_row_from_dots(const rows::Params& p, const Acc* dots, int i, Put put,
                                      double* lse) {
  using A = rows::PolicyArith;
  const A a{p.policy};
  const int n = rows::visible_count(i, p.seq_q, p.seq_kv, p.causal);
  auto score = [&](int j) {
    return a.round(rows::Stage::score, rows::scale_score(a, p, static_cast<double>(dots[j])));
  };
  rows::RowSoftmax<A> sm;
  for (int j = 0; j < n; ++j) sm.take_max(score(j));
  if (!sm.has_max()) {  // the guard of rows/softmax.hpp: P = 0 gives O = 0
    for (int j = 0; j < p.seq_kv; ++j) put(j, 0.0);
    *lse = rows::neg_inf<double>();
    return;
  }
  for (int j = 0; j < n; ++j) sm.add_term(a, sm.exp(a, score(j)));
  sm.end_sum(a);
  for (int j = 0; j < p.seq_kv; ++j)
    put(j, j < n ? a.round(rows::Stage::prob, sm.normalize(a, sm.exp(a, score(j)))) : 0.0);
  *lse = sm.lse();
}

#if defined(__CUDACC__)
struct SoftmaxParams {
  int heads_in_chunk;  // (b, h) pairs in this chunk
  int first_head;      // flat (b * H + h) of the chunk's first head
  int rows_in_chunk;   // query rows of each head in this chunk: all N_q, or a slice of them
  int first_row;       // the slice's first query row
  rows::Params rows;
  double* lse;  // (B, H, N_q), indexed by the flat head
};

// One thread per (head, query row) of the chunk. Reads the raw dot products S (rows_in_chunk,
// N_kv) of each head from the GEMM in its accumulator type, writes P (rows_in_chunk, N_kv) in
// the GEMM operand type T.
template <class Acc, class T>
__global__ void softmax_rows_kernel(const Acc* scores, T* probs, SoftmaxParams p) {
  const long row = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= static_cast<long>(p.heads_in_chunk) * p.rows_in_chunk) return;
  const int head = static_cast<int>(row / p.rows_in_chunk);
  const int i = p.first_row + static_cast<int>(row % p.rows_in_chunk);
  const Acc* s_row = scores + static_cast<std::size_t>(row) * p.rows.seq_kv;  // (N_kv)
  T* p_row = probs + static_cast<std::size_t>(row) * p.rows.seq_kv;           // (N_kv)
  double* lse = p.lse + (static_cast<std::size_t>(p.first_head) + head) * p.rows.seq_q +
                static_cast<std::size_t>(i);
  softmax_row_from_dots(
      p.rows, s_row, i, [&](int j, double prob) { store_as(prob, p_row[j]); }, lse);
}

// O as the PV GEMM left it (accumulator type) -> the policy's output format, as doubles.
template <class Acc>
__global__ void round_output_kernel(const Acc* in, double* out, std::size_t n,
                                    numerics::PrecisionPolicy policy) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) out[idx] = policy.round(numerics::Stage::output, static_cast<double>(in[idx]));
}
#endif

}  // namespace attndev::cuda::baseline
