// Element-wise and row kernels of the cuBLAS baseline: operand conversion, the softmax that
// rounds at the policy's stages exactly as the emulator's baseline does, and the output rounding.
//
// Only the two GEMMs differ from the emulator (cuBLAS sums in its own blocked order); everything
// between and after them is the emulator's arithmetic through lib/numerics, one thread per row
// with the row sum in increasing j, so a deviation between the two backends is attributable to
// the matrix products alone.
#pragma once

#include <cmath>
#include <cstddef>

#include "cuda/convert.cuh"
#include "numerics/arith.hpp"
#include "numerics/math.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda::baseline {

struct SoftmaxParams {
  int heads_in_chunk;  // (b, h) pairs in this chunk
  int first_head;      // flat (b * H + h) of the chunk's first head
  int seq_q, seq_kv;
  bool causal;
  bool scale_scores;
  double scale;
  numerics::PrecisionPolicy policy;
  double* lse;  // (B, H, N_q), indexed by the flat head
};

// One thread per (head, query row). Reads the raw dot products S (N_q, N_kv) of the GEMM in its
// accumulator type, writes P (N_q, N_kv) in the GEMM operand type T.
template <class Acc, class T>
__global__ void softmax_rows_kernel(const Acc* scores, T* probs, SoftmaxParams p) {
  using namespace numerics;
  const long row = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= static_cast<long>(p.heads_in_chunk) * p.seq_q) return;
  const int i = static_cast<int>(row % p.seq_q);
  const PrecisionPolicy& pol = p.policy;
  const Acc* s_row = scores + static_cast<std::size_t>(row) * p.seq_kv;  // (N_kv)
  T* p_row = probs + static_cast<std::size_t>(row) * p.seq_kv;           // (N_kv)
  const long last_visible = p.causal ? static_cast<long>(i) + (p.seq_kv - p.seq_q) : p.seq_kv - 1;
  // The scale as the score arithmetic holds it: rounded to score_accum (Problem::score_scale).
  const double scale = round_to(pol.score_accum, p.scale);
  auto score = [&](int j) {
    const double d = static_cast<double>(s_row[j]);
    return pol.round(Stage::score, p.scale_scores ? mul_in(pol.score_accum, d, scale) : d);
  };

  double m = -INFINITY;
  for (int j = 0; j < p.seq_kv && j <= last_visible; ++j) {
    const double s = score(j);
    m = m < s ? s : m;  // std::max's semantics, as the emulator (NaN handling included)
  }
  double* lse = p.lse + static_cast<std::size_t>(p.first_head) * p.seq_q + row;
  if (m == -INFINITY) {  // fully masked row: P = 0 gives O = 0, never exp(-inf - -inf)
    for (int j = 0; j < p.seq_kv; ++j) store_as(0.0, p_row[j]);
    *lse = -INFINITY;
    return;
  }
  double l = 0.0;
  for (int j = 0; j < p.seq_kv && j <= last_visible; ++j)
    l = add_in(pol.stats, l, exp_in(pol.stats, sub_in(pol.stats, score(j), m)));
  for (int j = 0; j < p.seq_kv; ++j) {
    double prob = 0.0;
    if (j <= last_visible) {
      const double e = exp_in(pol.stats, sub_in(pol.stats, score(j), m));
      prob = pol.round(Stage::prob, div_in(pol.stats, e, l));
    }
    store_as(prob, p_row[j]);
  }
  *lse = m + log(l);
}

// O as the PV GEMM left it (accumulator type) -> the policy's output format, as doubles.
template <class Acc>
__global__ void round_output_kernel(const Acc* in, double* out, std::size_t n,
                                    numerics::PrecisionPolicy policy) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) out[idx] = policy.round(numerics::Stage::output, static_cast<double>(in[idx]));
}

}  // namespace attndev::cuda::baseline
