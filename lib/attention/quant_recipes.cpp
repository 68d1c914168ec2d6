// The recipe table: each recipe's rules and the code they were read from. Constants that come
// from a source carry it here, where they are defined.
#include "attention/quant_recipes.hpp"

#include <iterator>

#include "attention/fp8_quant.hpp"

namespace attndev::attention::quant {

namespace {

using numerics::Format;
using numerics::quant::ElemRounding;

// FA-3's released kernel keeps P in [0, 2^8] before the e4m3 cast: hopper/softmax.h, Max_offset.
constexpr double kFa3MaxOffset = 8.0;
// SageAttention2: csrc/qattn/attn_utils.cuh, #define S_FP8_OFFSET 8.807f (about log2 448).
constexpr double kSage2Offset = static_cast<double>(8.807f);
// SageAttention2++: sageattention/core.py, quant_v_scale_max = 2.25 with the fp16 P V accumulator
// (so that 32 * 448 * 2.25 = 32256 stays below fp16's 65504).
constexpr double kSage2ppVScaleMax = 2.25;
// SageAttention's Q block of 128 tokens and K block of 64 (BLKQ, BLKK), per-thread slices of
// WARPQ = 32 Q tokens and WARPK = 64 K tokens (core.py, per_thread_int8_triton arguments).
constexpr int kSageBlockQ = 128, kSageBlockK = 64, kSageWarpQ = 32, kSageWarpK = 64;
// OCP MX v1.0: 32 elements share an e8m0 scale; NVFP4: 16 share a ue4m3 scale.
constexpr int kMxBlock = 32, kNvfp4Block = 16;

constexpr Spec fp8_spec(Granularity g, int rows = 1) {
  return {Format::fp8_e4m3, g, rows, 1, ScaleRule::amax, ElemRounding::nearest_even, 0.0};
}
constexpr Spec sage_int_spec(Format f, Granularity g, int rows, ScaleRule rule) {
  return {f, g, rows, 1, rule, ElemRounding::half_add_trunc, 0.0};
}
constexpr Spec sage_v_spec(double qmax) {
  return {Format::fp8_e4m3,      Granularity::per_channel,   1,   1,
          ScaleRule::amax_recip, ElemRounding::nearest_even, qmax};
}
// V as SageAttention 1 reads it: fp16, not quantized (element fp16 marks "no quantization").
constexpr Spec kFp16V = {Format::fp16,    Granularity::per_tensor,    1,  1,
                         ScaleRule::amax, ElemRounding::nearest_even, 0.0};

RecipeSpec fa3_paper(Algorithm a, bool blocks, bool hadamard, const char* description) {
  RecipeSpec r{a, description,
               "Shah et al., FlashAttention-3 (arXiv 2407.08608), Sec. 3.3 and Table 3; the same "
               "rules as attndev's flash3-fp8 (lib/attention/fp8_attention.cpp)"};
  r.hadamard = hadamard;
  r.q_block_is_br = blocks;
  r.kv_block_is_bc = blocks;
  const Granularity g = blocks ? Granularity::row_blocks : Granularity::per_tensor;
  r.q = r.k = r.v = fp8_spec(g);
  r.score = ScoreForm::dequant;
  r.pv_form = PvForm::block_merge;
  r.v_scale_at_end = false;
  return r;
}

RecipeSpec sage2(Algorithm a, Format qk_format, bool smooth_q, bool pv_fp16, double v_scale_max,
                 const char* description, const char* source) {
  RecipeSpec r{a, description, source};
  r.smooth_k = true;
  r.smooth_k_stored = true;  // per_thread_int8: k = k - km on the torch tensors
  r.smooth_q = smooth_q;
  r.q = sage_int_spec(qk_format, Granularity::sage2_q_thread, kSageWarpQ, ScaleRule::amax_eps);
  r.k = sage_int_spec(qk_format, Granularity::sage2_k_thread, kSageWarpK, ScaleRule::amax_eps);
  r.v = sage_v_spec(v_scale_max);
  r.qk = qk_format == Format::int4 ? OperandKind::int4 : OperandKind::int8;
  r.score = ScoreForm::folded;
  r.offset = kSage2Offset;
  r.float_log2e = true;
  r.pv_fp16 = pv_fp16;
  r.pv_form = PvForm::two_level;
  return r;
}

RecipeSpec make(Algorithm a) {
  switch (a) {
    case Algorithm::fa3_fp8: {
      RecipeSpec r{a,
                   "FlashAttention-3's released fp8 kernel: e4m3 Q/K/V with one descale per "
                   "(batch, head) folded into the softmax scale, P offset by 2^8 before the e4m3 "
                   "cast, one fp8 P V accumulator over every K/V block",
                   "Dao-AILab/flash-attention hopper/softmax.h (Max_offset = 8), "
                   "hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp (q/k/v_descale)"};
      r.q = r.k = r.v = fp8_spec(Granularity::per_head);
      r.score = ScoreForm::folded;
      r.offset = kFa3MaxOffset;
      r.raw_max = true;
      r.pv_form = PvForm::chain;
      return r;
    }
    case Algorithm::fa3_fp8_paper:
      return fa3_paper(a, true, true,
                       "FA-3's paper setting (flash3-fp8) on a tensor-core profile: Br x d / Bc x "
                       "d block scales, Hadamard rotation, P in [0, 1] cast to e4m3");
    case Algorithm::fa3_fp8_paper_per_tensor:
      return fa3_paper(a, false, true, "fa3-fp8-paper with one scale per tensor");
    case Algorithm::fa3_fp8_paper_no_hadamard:
      return fa3_paper(a, true, false, "fa3-fp8-paper without the Hadamard rotation");
    case Algorithm::sage1: {
      RecipeSpec r{a,
                   "SageAttention: K minus its token mean, INT8 Q (128-token blocks, sm_scale "
                   "folded in) and K (64-token blocks), P in fp16, P V accumulated in fp16 per "
                   "block and added to fp32",
                   "Zhang et al., SageAttention (arXiv 2410.02367); thu-ml/SageAttention "
                   "sageattention/triton/quant_per_block.py, attn_qk_int8_per_block.py"};
      r.smooth_k = true;
      r.smooth_k_stored = true;
      r.q_prescaled = true;
      r.q = sage_int_spec(Format::int8, Granularity::row_blocks, kSageBlockQ, ScaleRule::amax_div);
      r.k = sage_int_spec(Format::int8, Granularity::row_blocks, kSageBlockK, ScaleRule::amax_div);
      r.v = kFp16V;
      r.qk = OperandKind::int8;
      r.score = ScoreForm::prescaled;
      r.p_format = Format::fp16;
      r.pv = OperandKind::fp16;
      r.pv_fp16 = true;
      r.pv_form = PvForm::two_level;
      // Triton contracts acc * alpha + dot(...) and l * alpha + l_ij into FMAs (its default
      // enable_fp_fusion): attndev's reading, not measured on a device.
      r.fused_merge = true;
      r.v_scale_at_end = false;
      return r;
    }
    case Algorithm::sage2_8b:
      return sage2(
          a, Format::int8, false, false, 0.0,
          "SageAttention2 (8-bit): K smoothed, per-thread INT8 Q and K, P offset to "
          "[0, 448] in e4m3, per-channel FP8 V, each block's P V from zero then added "
          "in fp32 (two-level accumulation)",
          "Zhang et al., SageAttention2 (ICML 2025, arXiv 2411.10958); thu-ml/"
          "SageAttention triton/quant_per_thread.py, csrc/qattn/qk_int_sv_f8_cuda_sm90.cu, "
          "attn_utils.cuh, csrc/fused/fused.cu");
    case Algorithm::sage2_4b:
      return sage2(a, Format::int4, true, false, 0.0,
                   "SageAttention2 (4-bit): sage2-8b with per-thread INT4 Q and K and Q smoothed "
                   "by its 128-token block mean (the block mean times K added back in fp32)",
                   "Zhang et al., SageAttention2 (arXiv 2411.10958), Sec. 3; thu-ml/SageAttention "
                   "triton/quant_per_thread.py (quant_query_per_thread_int4_kernel)");
    case Algorithm::sage2pp:
      return sage2(a, Format::int8, false, true, kSage2ppVScaleMax,
                   "SageAttention2++: sage2-8b with the P V mma accumulating in fp16 and V's "
                   "per-channel scale amax / 2.25",
                   "Zhang et al., SageAttention2++ (arXiv 2505.21136); thu-ml/SageAttention "
                   "sageattention/core.py (pv_accum_dtype fp32+fp16, quant_v_scale_max 2.25)");
    case Algorithm::sage3: {
      RecipeSpec r{a,
                   "SageAttention3: Q and K smoothed, NVFP4 Q, K (16 along d) and V (16 along "
                   "tokens) with e4m3 block scales, two-level P quantization (P scaled to [0, "
                   "2688], a ue4m3 scale per 16 keys from the block max), fp4 block-scaled mma",
                   "Zhang et al., SageAttention3 (arXiv 2505.11594); thu-ml/SageAttention "
                   "sageattention3_blackwell (api.py, fp4_quantization_4d.cu, softmax_fused.h)"};
      r.smooth_k = true;
      r.smooth_q = true;
      const Spec fp4 = {Format::fp4_e2m1,       Granularity::row_groups,    1,  kNvfp4Block,
                        ScaleRule::ue4m3_recip, ElemRounding::nearest_even, 0.0};
      r.q = r.k = fp4;
      r.v = fp4;
      r.v.granularity = Granularity::col_groups;
      r.v.rows = kNvfp4Block;
      r.qk = OperandKind::nvfp4;
      r.score = ScoreForm::block_scaled;
      r.prob = ProbForm::nvfp4_blocks;
      r.p_format = Format::fp4_e2m1;
      r.pv = OperandKind::nvfp4;
      r.pv_form = PvForm::two_level;
      r.fused_merge = true;  // softmax_fused.h: O = O * alpha + O_tmp in one FFMA
      r.v_scale_at_end = false;
      return r;
    }
    case Algorithm::mxfp8: {
      RecipeSpec r{a,
                   "MXFP8 (a format recipe, not a twin of cuDNN's closed kernel): e4m3 blocks of "
                   "32 with NVIDIA's round-up e8m0 scale on Q, K (along d), V (along tokens) and "
                   "P (along keys), block-scaled mma, one fp32 accumulator",
                   "OCP Microscaling Formats (MX) v1.0; NVIDIA cuBLAS 1D block quantization "
                   "(RCEIL); pytorch/ao torchao/prototype/mx_formats (ScaleCalculationMode)"};
      const Spec mx = {Format::fp8_e4m3,    Granularity::row_groups,    1,  kMxBlock,
                       ScaleRule::nv_rceil, ElemRounding::nearest_even, 0.0};
      r.q = r.k = mx;
      r.v = mx;
      r.v.granularity = Granularity::col_groups;
      r.v.rows = kMxBlock;
      r.qk = OperandKind::mxfp8;
      r.score = ScoreForm::block_scaled;
      r.prob = ProbForm::mx_blocks;
      r.pv = OperandKind::mxfp8;
      r.pv_form = PvForm::chain;
      r.v_scale_at_end = false;
      return r;
    }
    default:
      break;
  }
  return RecipeSpec{a, "", ""};
}

const RecipeSpec* table() {
  static const RecipeSpec* const kTable = [] {
    static RecipeSpec specs[std::size(kQuantAlgorithms)];
    for (std::size_t i = 0; i < std::size(kQuantAlgorithms); ++i)
      specs[i] = make(kQuantAlgorithms[i]);
    return specs;
  }();
  return kTable;
}

// Where an operand kind has a tensor-core instruction (numerics/mma_profiles.hpp's architectures).
bool kind_supported(OperandKind k, numerics::mma::Arch arch, bool fp16_accum) {
  using numerics::mma::Arch;
  (void)fp16_accum;
  switch (k) {
    case OperandKind::fp8:
      return arch == Arch::sm89 || arch == Arch::sm90 || arch == Arch::sm100;
    case OperandKind::fp16:
    case OperandKind::int8:
      return arch != Arch::none;
    case OperandKind::int4:
      // INT4 mma (m16n8k64 .s4) is an Ampere / Ada instruction: SageAttention2's 4-bit kernel
      // targets sm_89; attndev models no INT4 instruction for sm_90 or sm_100.
      return arch == Arch::sm80 || arch == Arch::sm89;
    case OperandKind::mxfp8:
    case OperandKind::nvfp4:
      return arch == Arch::sm100;
  }
  return false;
}

std::string archs_with(OperandKind k, bool fp16_accum) {
  std::string out;
  for (numerics::mma::Arch a : numerics::mma::kAllArchs)
    if (kind_supported(k, a, fp16_accum))
      out += (out.empty() ? "" : ", ") + std::string(numerics::mma::arch_name(a));
  return out;
}

}  // namespace

const char* operand_kind_name(OperandKind k) {
  switch (k) {
    case OperandKind::fp8:
      return "fp8 (e4m3)";
    case OperandKind::fp16:
      return "fp16";
    case OperandKind::int8:
      return "int8";
    case OperandKind::int4:
      return "int4";
    case OperandKind::mxfp8:
      return "block-scaled fp8 (kind::mxf8f6f4)";
    case OperandKind::nvfp4:
      return "block-scaled fp4 (kind::mxf4nvf4)";
  }
  return "?";
}

const RecipeSpec* find_recipe(Algorithm a) {
  if (!is_quant_algorithm(a)) return nullptr;
  for (std::size_t i = 0; i < std::size(kQuantAlgorithms); ++i)
    if (table()[i].algorithm == a) return &table()[i];
  return nullptr;
}

std::string recipe_unsupported(Algorithm a, numerics::mma::Arch arch, const Shape& shape,
                               int block_r, int block_c) {
  const RecipeSpec* r = find_recipe(a);
  if (!r) return std::string(algorithm_name(a)) + " is not a quantized recipe";
  const std::string name = algorithm_name(a);
  const int d = shape.head_dim;
  if (arch != numerics::mma::Arch::none) {
    for (const OperandKind k : {r->qk, r->pv})
      if (!kind_supported(k, arch, r->pv_fp16))
        return name + " needs " + operand_kind_name(k) + " tensor-core instructions, which " +
               numerics::mma::arch_name(arch) +
               " does not have; profiles that do: " + archs_with(k, r->pv_fp16);
  }
  if (r->hadamard && !fp8::is_power_of_two(d))
    return name + ": the Hadamard rotation needs head_dim a power of two (got " +
           std::to_string(d) + ")";
  for (const Spec* s : {&r->q, &r->k})
    if (std::string e = tiling_error(*s, shape.seq_q, d); !e.empty()) return name + ": " + e;
  const bool block_scaled = r->qk == OperandKind::mxfp8 || r->qk == OperandKind::nvfp4;
  if (block_scaled) {
    // The block-scaled instructions take k in whole instructions: 32 (mxf8f6f4) or 64
    // (mxf4nvf4: four 16-element scale groups) along d, and P V along a K/V block's keys.
    const bool nv = r->qk == OperandKind::nvfp4;
    const int k_step =
        arch == numerics::mma::Arch::none ? (nv ? kNvfp4Block : kMxBlock) : (nv ? 64 : kMxBlock);
    if (d % k_step != 0)
      return name + ": head_dim " + std::to_string(d) + " is not a multiple of " +
             std::to_string(k_step) + ", the k of its block-scaled instruction";
    if (block_c % k_step != 0)
      return name + ": block_c " + std::to_string(block_c) + " is not a multiple of " +
             std::to_string(k_step) + " (P V runs whole scale blocks of keys)";
  }
  (void)block_r;
  return {};
}

}  // namespace attndev::attention::quant
