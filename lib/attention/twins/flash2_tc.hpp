// flash2-tc-twin: an emulated twin of attndev's own tensor-core kernel flash2-tc
// (lib/cuda/flash2_tc.cuh, flash2_tc_cta), operation by operation, in fp32 as the kernel's
// registers hold it, with both GEMMs through a tensor-core profile (numerics/mma.hpp).
//
// Per query row (rows never interact, so the CTA's row grouping and Br do not matter; a row runs
// the K/V blocks up to the last one holding a key it sees, as the kernel's later blocks leave it
// unchanged: all its scores -inf, alpha = exp2(0) = 1, p = 0), for each K/V block of Bc = 64 keys
// in increasing order:
//   S      = the profile's dot over d from C = 0 (k16 mma along d), masked keys -inf
//   max    per lane q of the quad (columns 8 nt + 2q, 8 nt + 2q + 1): fmaxf over them, then
//          fmaxf with lane q^1's, then lane q^2's (shfl.xor 1, then 2)
//   OnlineSoftmax::rescale_max per lane: m_new = max(m, mx); the -inf guard; max_scaled =
//          m_new * scale_log2; alpha = exp2((m - m_new) * scale_log2) (0 on the first block)
//   p      = exp2(fmaf(s, scale_log2, -max_scaled))       one FFMA (TcArith::mul_sub)
//   sum_q  = the lane's p from 0, column order (nt outer, the pair inner)
//   l_q    = fmaf(l_q, alpha, sum_q)                       merge_block_sum
//   acc   *= alpha                                         before the block's P V joins it
//   P      = RN(p) to bf16 / fp16                          pack2
//   acc    = the profile's dot over the block's keys with C = acc (k16 mma along the keys)
// End of row: l = (l_0 + l_1) + (l_2 + l_3) (shfl.xor 1, then 2); l == 0 -> O = 0, lse = -inf;
// else inv_l = 1.f / l and O = RN(acc * inv_l) to bf16 / fp16, rounded once; lse = m scale +
// log(l) in fp32.
//
// exp2 is pluggable: the kernel calls CUDA's exp2f (it is built without fast-math), whose bits
// no source fixes; the twin uses numerics::exp2_f32 in its place unless given another function
// (the host's exp2f for the comparison with the host simulation of the kernel; a table measured
// on a device later). lse uses the host's logf: it is compared within a tolerance, never bitwise.
// Without a profile (policy.mma none) each GEMM is a chain of fp32 FMAs in the same k order:
// the same algorithm under the emulator's usual arithmetic.
#pragma once

#include <functional>
#include <string>

#include "attention/attention.hpp"
#include "attention/problem.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention::twins {

// K/V block width of flash2-tc per head dim (lib/cuda/dispatch.hpp's TcTable: Bc = 64 for the
// two head dims it instantiates); 0 for a head dim the kernel does not have.
constexpr int flash2_tc_block_c(int head_dim) {
  return head_dim == 64 || head_dim == 128 ? 64 : 0;
}

// exp2 as the twin evaluates it; empty: numerics::exp2_f32.
using Exp2 = std::function<float(float)>;

// Empty when the twin can run (policy, shape); else why not (a skipped row's reason): the
// kernel's policy is kernel-bf16 or kernel-fp16 (with any tensor-core profile of fp16/bf16) and
// its head dims are 64 and 128.
std::string flash2_tc_unsupported(const numerics::PrecisionPolicy& policy, const Shape& shape);

// The twin on a validated problem (flash2_tc_unsupported says it is supported).
void run_flash2_tc(const Problem& p, const Exp2& exp2, Output& out);

}  // namespace attndev::attention::twins
