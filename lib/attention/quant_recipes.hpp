// The quantized attention recipes: FlashAttention-3's fp8 forward (its released kernel and its
// paper's setting), SageAttention 1, 2 (8-bit and 4-bit QK), 2++ and 3, and an MXFP8 recipe,
// each a composition of the quantization stage (quantize.hpp) with a score, softmax and P V form
// (quant_attention.cpp runs them all through one loop). Sources of every rule: the `source` of
// each table entry (quant_recipes.cpp) and docs/numerics.md, "Quantized attention recipes".
//
// The tensor-core profile is the policy's `mma` (numerics/mma_profiles.hpp): none runs every
// product in exact arithmetic accumulated by fp32 FMAs (fp16 where the recipe's accumulator is
// fp16); sm89 / sm90 / sm100 run the recipe's own instructions through the profile (fp8 with 13
// fraction bits and e8m13 results on sm89/sm90, 25 on sm100; block-scaled kinds on sm100 only).
// A recipe a profile cannot run is unsupported (a skipped row with recipe_unsupported's reason).
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "attention/quantize.hpp"
#include "numerics/mma_profiles.hpp"

namespace attndev::attention::quant {

// The operands of QK^T and of P V, as the tensor cores see them.
enum class OperandKind : std::uint8_t {
  fp8,    // e4m3 x e4m3, scales applied outside the mma
  fp16,   // fp16 x fp16 (SageAttention 1's P V)
  int8,   // int8 x int8 -> exact int32
  int4,   // int4 x int4 -> exact int32
  mxfp8,  // block-scaled e4m3 with e8m0 scales per 32 along k (kind::mxf8f6f4)
  nvfp4,  // block-scaled e2m1 with ue4m3 scales per 16 along k (kind::mxf4nvf4)
};
const char* operand_kind_name(OperandKind k);

// How a dot product becomes the softmax's argument.
enum class ScoreForm : std::uint8_t {
  // s = R(dot * R(s_q s_k)); FA-2's p = exp2(fma(s, scale_log2, -R(m scale_log2))):
  // FA-3's paper setting, computed as attndev's flash3-fp8 computes it
  dequant,
  // s = dot; e = R(scale_log2 * R(s_q s_k)) per (row, key); z = fma(s, e, -offset);
  // p = exp2(fma(s, e, -m)) with m the running max of z: FA-3's released kernel (descales folded
  // into the softmax scale, Max_offset) and SageAttention2 (S_FP8_OFFSET)
  folded,
  // Q already holds sm_scale log2(e); s = R(R(float(dot)) * R(s_q s_k)); p = exp2(s - m):
  // SageAttention 1's Triton kernel
  prescaled,
  // the mma applied the block scales: s = dot (+ dS); FA-2's exp2 form: MXFP8, SageAttention3
  block_scaled,
};

// How P reaches the second mma.
enum class ProbForm : std::uint8_t {
  cast,         // P = R(p) in p_format (e4m3 in [0, 1] or offset; fp16)
  mx_blocks,    // e4m3 with an e8m0 (NVIDIA round-up) scale per 32 keys
  nvfp4_blocks  // SageAttention3's two-level P: p in [0, 448 * 6], a ue4m3 scale per 16 keys
                // computed from the block's max score, e2m1 elements
};

// How each K/V block's P V joins the output accumulator O.
enum class PvForm : std::uint8_t {
  chain,        // O = R(O * alpha); O = mma(P, V, C = O): one accumulator over every block
  block_merge,  // pv = mma(P, V, C = 0); O = fma(pv, s_v(block), R(O * alpha)) (per-block V)
  two_level,    // pv = mma(P, V, C = 0) in the pv accumulator; O = fma(O, alpha, pv) in fp32
};

struct RecipeSpec {
  Algorithm algorithm = Algorithm::fa3_fp8;
  const char* description = "";
  const char* source = "";  // paper and code the rules come from
  // Transforms before quantization.
  bool hadamard = false;         // Q, K <- R_input((x D) H / sqrt(d)) (FA-3 paper)
  bool smooth_k = false;         // K <- K - mean over tokens
  bool smooth_k_stored = false;  // ... rounded to the input format (torch's k - km), not fp32
  bool smooth_q = false;         // Q <- Q - mean over each 128-token block, dS = mean . K added
  bool q_prescaled = false;      // Q <- R32(Q * R32(sm_scale * 1.44269504)) before quantization
  int q_block_is_br = 0;         // 1: q.rows = Br (FA-3 paper's Br x d blocks)
  int kv_block_is_bc = 0;        // 1: k.rows = v.rows = Bc
  Spec q = {}, k = {}, v = {};
  OperandKind qk = OperandKind::fp8;
  ScoreForm score = ScoreForm::dequant;
  double offset = 0.0;  // ScoreForm::folded: z = fma(s, e, -offset); P lies in [0, 2^offset]
  ProbForm prob = ProbForm::cast;
  numerics::Format p_format = numerics::Format::fp8_e4m3;
  OperandKind pv = OperandKind::fp8;
  bool pv_fp16 = false;  // the P V mma accumulates in fp16 (D rounded to nearest even)
  PvForm pv_form = PvForm::chain;
  bool v_scale_at_end = true;  // O *= s_v (per head or per channel) after 1/l (not per block)
  // Forms of single steps that differ between the kernels (quant_attention.cpp says where):
  bool raw_max = false;      // folded: the running max kept on raw scores (FA-3), not on z
  bool float_log2e = false;  // scale_log2 = R32(R32(scale) * R32(log2 e)) (SageAttention2's
                             // sm_scale *= math::log2e), not R32(scale * log2 e) in double
  bool fused_merge = false;  // two_level: O = fma(O, alpha, pv), not R(R(O * alpha) + pv)
};

// The recipe of a quantized algorithm (is_quant_algorithm), nullptr otherwise.
const RecipeSpec* find_recipe(Algorithm a);

// Empty when the recipe runs under this tensor-core profile, head dim and tiles; else why not:
// "sage3 needs block-scaled fp4 (kind::mxf4nvf4), which sm90 does not have; profiles that do:
// sm100", "mxfp8 blocks of 32 along d cannot tile head_dim 48", ...
std::string recipe_unsupported(Algorithm a, numerics::mma::Arch arch, const Shape& shape,
                               int block_r, int block_c);

}  // namespace attndev::attention::quant
