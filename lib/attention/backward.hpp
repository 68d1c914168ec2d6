// The attention backward pass on the CPU, under the same precision policies as the forward.
//
// Given dO, the gradient of the loss with respect to O, computes dQ, dK, dV of
//   S = scale * Q K^T,  P = softmax(S) (row-wise, causal mask applied),  O = P V.
//
// Two algorithms, mirroring the forward:
//   baseline  P is materialized as the baseline forward stores it (recomputed here by the same
//             recipe: S rounded to `score`, the forward's own softmax, rows::softmax_row, in
//             `stats`, P rounded to `prob`; keys a row does not see keep P = 0), then
//             dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)), dQ = dS K, dK = dS^T Q,
//             each as one full (N_q, N_kv) matrix, as a framework's autograd does.
//   flash2    FA-2's recomputing backward: nothing of size N_q x N_kv is stored. P is rebuilt tile
//             by tile from Q, K and the forward's log-sum-exp (P = exp(S - lse)), with
//             D = rowsum(dO * O) computed once up front (FA-2's preprocessing kernel). The outer
//             loop runs over K/V blocks of Bc rows, the inner over Q blocks of Br rows; dK_j, dV_j
//             live in accumulators for one K/V block, dQ accumulates across K/V blocks (the
//             kernel's fp32 atomicAdd, here in the fixed order j = 0, 1, ...).
// flash1 has no backward here (the study trains with baseline and flash2): it throws. So does a
// policy of the framework rounding model: every stage below is rounded as the kernel model does
// (one rounding per stage, each op in the stage's format), which is not what a framework's
// forward stored, so "P as the forward stores it" would not hold.
//
// Where each backward intermediate is rounded (stage of numerics::PrecisionPolicy):
//   input        Q, K, V (as the forward saw them) and dO, as stored in memory; O as stored by the
//                forward is already in `output`
//   score_accum  accumulator of Q K^T (recomputed S) and of dO V^T (dP)
//   score        S as the forward holds it (baseline: scaled in score_accum, then stored;
//                flash2: the raw dot product), and dP as stored (baseline) / in registers (flash2)
//   stats        D = rowsum(dO * O) (flash2) or rowsum(P * dP) (baseline), its accumulation, the
//                subtraction dP - D and the product P * (dP - D); flash2's recomputation
//                P = exp2(fma(S, scale*log2e, -lse*log2e)) with lse and scale*log2e held in
//                stats (FA-2 stores lse in fp32); the softmax of the baseline recipe
//   prob         P as fed to the dV matmul, and dS as fed to the dQ and dK matmuls (FA-2 casts
//                both to the input element type before the tensor-core GEMMs)
//   out_accum    accumulators of dV, dK and dQ, and the final multiplication of dQ, dK by scale
//   output       dQ, dK, dV as stored
// With ScalePlacement::query the forward's Q' = round_input(Q * scale) is rebuilt the same way,
// S = Q' K^T, and dQ = scale * dS K, dK = dS^T Q'.
#pragma once

#include "attention/attention.hpp"

namespace attndev::attention {

struct Gradients {
  Tensor dq;  // (B, H, N_q, d)
  Tensor dk;  // (B, H, N_kv, d)
  Tensor dv;  // (B, H, N_kv, d)
};

// `forward` is what run(algorithm, policy, inputs, options) returned for these inputs (flash2
// needs its lse and O; baseline needs O only for shape checks). `d_out` has O's shape.
// Throws std::invalid_argument naming the bad argument for impossible or mismatched arguments.
// Deterministic: (batch, head) pairs are split across options.threads, each computed in a fixed
// order, so the thread count never changes a bit of the result.
Gradients backward(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                   const Inputs& inputs, const Output& forward, const Tensor& d_out,
                   const Options& options);

}  // namespace attndev::attention
