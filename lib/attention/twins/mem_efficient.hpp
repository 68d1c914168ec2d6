// Twin of PyTorch's memory-efficient attention kernel (SDPBackend.EFFICIENT_ATTENTION: the
// xformers / CUTLASS fMHA forward, pytorch/pytorch aten/src/ATen/native/transformers/cuda/
// mem_eff_attention/kernel_forward.h), operation by operation; docs/numerics.md, "Twins of the
// CUDA kernels", cites each step.
//
// The kernel (dispatch_cutlassF_{bf16,f16}_sm80 in kernels/cutlassF.h takes the first kernel whose
// kMaxK holds the head dim, for every GPU from sm_80 to sm_9x): queries x keys per block 64 x 64
// (d <= 64), 64 x 128 (d <= 128), 32 x 128 with O accumulated in global memory (larger d); one
// warp per 32 x 32 tile of S, so a row's keys of a block are split over kKeysPerBlock / 32 warps.
//
// One row (attention_kernel, iterative_softmax):
//   K/V blocks in FORWARD order (iter_key_start = 0, kKeysPerBlock, ...)
//   S = Q K^T: MmaChain over the head dim from C = 0
//   accum = p.scale * S (kSupportsBias), then frag *= 1.0f * kLog2e: two FMULs per score
//   mi = max(mi, block max) in that scaled log2 domain (atomicMaxFloat)
//   if m_prime < mi: out_rescale = exp2(m_prime - mi), s_prime *= out_rescale; else 1
//   O kept in registers: acc_o *= out_rescale (every block but the first)
//   p = exp2(frag - mi): FADD then the exponential (two roundings)
//   per thread: total = 0 + p of its 8 columns of the warp's 32 (lane % 4) * 2 + 8 nj + {0, 1};
//     reduceSameRow: (t0 + t1) + (t2 + t3); s_prime = s_prime + w_0 + w_1 + ... in warp order
//   P stored to shared memory as the element type (RN); acc_o = MmaChain(P, V, C = acc_o)
//   epilogue (MemoryEfficientAttentionNormalize): O = (1 / s_prime) * acc_o, cast RN; with O in
//     global memory, per block D = alpha * acc + beta * D_prev (alpha = 1 / s_prime on the last
//     block, else 1; beta = alpha * out_rescale), fp32 between blocks.
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "attention/problem.hpp"
#include "attention/twins/fa2_cuda.hpp"

namespace attndev::attention::twins {

struct MemEffPlan {
  int queries_per_block = 0, keys_per_block = 0;
  bool output_in_registers = true;  // kKeepOutputInRF (kMaxK <= kKeysPerBlock)
  int warps_per_row = 0;            // MM0's WarpCount::kN
};

// The kernel dispatch_cutlassF picks, or false with the reason in *why (head dims that are not a
// multiple of 8 have no aligned sm80 kernel for bf16 and fp16).
bool mem_efficient_plan(const Shape& shape, MemEffPlan& plan, std::string* why);

void run_mem_efficient(const Problem& p, const TwinSetup& setup, Output& out);

}  // namespace attndev::attention::twins
