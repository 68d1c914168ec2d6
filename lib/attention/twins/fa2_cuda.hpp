// Twin of FlashAttention-2's CUDA forward kernel (Dao-AILab/flash-attention, csrc/flash_attn/src/;
// PyTorch's SDPBackend.FLASH_ATTENTION builds the same sources), operation by operation. Every
// step and the function it follows is listed in docs/numerics.md, "Twins of the CUDA kernels".
//
// The launch (flash_api.cpp, flash_fwd_launch_template.h): the head dim is padded to kHeadDim
// (32, 64, 96, 128, 192, 256), tiles kBlockM x kBlockN by head dim, GPU and causality; when
// batch x heads x ceil(N_q / 64) would not fill the GPU the K/V sequence is split over CTAs
// (Fa2Plan::num_splits > 1): each split runs with 64 x kBlockN tiles and writes an fp32 O and
// its lse, and a second kernel combines them.
//
// One row of one CTA (compute_attn_1rowblock[_splitkv]):
//   K/V blocks from n_block_max - 1 DOWN to n_block_min (the ragged last block first)
//   S = Q K^T: MmaChain over the head dim from C = 0; masked and out-of-range keys -inf
//   softmax_rescale_o: row max over raw scores; after the first block
//       scores_scale = exp2((max_prev - max_cur) * scale_log2), row_sum *= it, acc_o *= it
//   scale_apply_exp2: max_scaled = max * scale_log2; p = exp2(s * scale_log2 - max_scaled), one
//       FFMA upstream, FMUL then FADD where UNFUSE_FMA is defined (Fa2Build::unfused_exp2_arg)
//   reduce_sum: each of the row's 4 threads sums the fp32 p of its columns
//       (lane % 4) * 2 + 8 nj + {0, 1} in that order (from its first p in the first block)
//   P = p cast to the element type (RN); acc_o = MmaChain(P, V, C = acc_o)
//   normalize_softmax_lse: row_sum all-reduced over the 4 threads ((t0 + t2) + (t1 + t3)),
//       inv_sum = 1 / row_sum (1 for 0 or NaN), acc_o *= inv_sum, cast (RN)
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "attention/problem.hpp"
#include "attention/twins/gpu_profile.hpp"
#include "attention/twins/steps.hpp"

namespace attndev::attention::twins {

// What a build of the kernel fixes.
struct Fa2Build {
  // UNFUSE_FMA (PyTorch's build defines it: aten/src/ATen/native/transformers/cuda/flash_attn/
  // CMakeLists.txt): the exp2 argument as __fmul_rn then a subtraction, two roundings; upstream
  // nvcc contracts x * scale - max_scaled into one FFMA.
  bool unfused_exp2_arg = false;
  // `row_sum *= scores_scale` followed by the block's first `row_sum += p` as one FFMA: nvcc
  // contracts a multiply whose only use is an add (--fmad=true, the default of both builds). No
  // source fixes it; false is the literal FMUL then FADD.
  bool fused_sum_rescale = true;
};

struct Fa2Plan {
  int head_dim_padded = 0;  // kHeadDim
  int block_m = 0, block_n = 0;
  int num_splits = 1;  // > 1: the split-KV kernel (64 x split_block_n) and the combine kernel
  int split_block_n = 0;
};

// The kernel the launch code would pick, or an empty optional with the reason in *why.
bool fa2_plan(const Shape& shape, bool causal, const GpuProfile& gpu, Fa2Plan& plan,
              std::string* why);

// flash_api.cpp num_splits_heuristic, its float arithmetic included.
int fa2_num_splits_heuristic(int batch_nheads_mblocks, int num_sms, int num_n_blocks,
                             int max_splits);

struct TwinSetup {
  const MmaChain* mma = nullptr;
  Exp2 exp2 = project_exp2();
  GpuProfile gpu = default_gpu_profile();
};

// Writes out.o (B, H, N_q, d) and out.lse (B, H, N_q). p.q, p.k, p.v hold element-type values;
// P is stored in p.policy.prob, O in p.policy.output (the element type for kernel-bf16/fp16).
void run_fa2(const Problem& p, const TwinSetup& setup, const Fa2Build& build, Output& out);

}  // namespace attndev::attention::twins
