// Quantization of a (B, H, N, d) tensor as one stage of a recipe: which elements share a scale
// (Granularity), how the scale is chosen and applied (ScaleRule), how an element is rounded
// (numerics/quant.hpp's ElemRounding), and what the stage did (Stats: saturated elements, zero or
// non-finite scales, the quantization error alone). Every quantized attention recipe
// (quant_recipes.hpp) and attndev.quantize in Python are compositions of this one model.
//
// Granularities (groups of elements sharing one scale, inside one (b, h) unless per_tensor):
//   per_tensor      every element of the tensor
//   per_head        each (b, h) matrix: FA-3's released kernel, one descale per (batch, head)
//   row_blocks      `rows` consecutive rows x d: FA-3's paper (Br x d for Q, Bc x d for K, V),
//                   SageAttention's per-block INT8 (128-token Q blocks, 64-token K blocks)
//   per_token       each row
//   per_channel     each column over all rows: SageAttention2's V
//   row_groups      `cols` consecutive elements of a row, along d: MX blocks of 32 (OCP MX v1.0),
//                   NVFP4 blocks of 16, for Q and K (d is QK^T's reduction dimension)
//   col_groups      `rows` consecutive rows of a column: the same blocks for V, whose reduction
//                   dimension in P V is the tokens
//   sage2_q_thread  SageAttention2's per-thread Q (sageattention/triton/quant_per_thread.py):
//                   inside each slice of `rows` tokens (WARPQ = 32), the tokens with the same
//                   index mod 8 share a scale (the rows one thread holds in the mma layout)
//   sage2_k_thread  its per-thread K: inside each block of `rows` tokens (64), tokens 8j + 2t and
//                   8j + 2t + 1 share scale t (4 scales per block)
//
// Scale rules (qmax = the element format's largest value unless Spec::qmax says otherwise; every
// fp32 operation rounded to fp32 as the kernels compute it):
//   amax          s = R(amax / qmax), all-zero group s = 1; x_q = round(R(x / s)). FA-3's paper
//                 setting as attndev's flash3-fp8 computes it (attention/fp8_quant.hpp).
//   amax_recip    SageAttention's CUDA quantizers (csrc/fused/fused.cu): amax is at least 1e-7
//                 (int8: QuantInt8Kernel's amax_val = 0.0000001f), s = R(amax / qmax),
//                 x_q = round(R(x * R(qmax / amax))); V per channel: MeanScaleKernel, no floor.
//   amax_eps      SageAttention's Triton quantizers (quant_per_thread.py): s = R(R(amax / qmax) +
//                 1e-7), x_q = round(R(x / s)).
//   amax_div      SageAttention 1's Triton per-block quantizer: s = R(amax / qmax),
//                 x_q = round(R(x / s)); an all-zero block has s = 0 and its elements are 0
//                 (0 / 0 in the kernel): counted as a zero scale.
//   ocp_floor     e8m0 s = 2^(floor(log2 amax) - emax_elem) (OCP MX v1.0 Sec. 6.3), x_q =
//                 round(x / s), exact.
//   nv_rceil      e8m0 s = 2^ceil(log2 R(amax / qmax)) (NVIDIA's RCEIL), x_q = round(x / s).
//   nvfp4         torchao's two-level NVFP4 (torchao/prototype/mx_formats/nvfp4_tensor.py,
//                 _nvfp4_quantize with a per-tensor scale): t = R(amax_tensor / (448 * 6)),
//                 s8 = e4m3(clamp(R(R(amax / 6) / t), 2^-6, 448)), x_q = e2m1(clamp(R(x /
//                 R(t * s8)), -6, 6)); the value is x_q * s8 * t.
//   ue4m3_recip   SageAttention3's NVFP4 (no tensor scale): SF = e4m3(R(amax / 6)) (cvt.rn.
//                 satfinite), x_q = round(R(x * R(1 / SF))); an all-zero block has SF = 0 and
//                 elements 0.
// A scale that cannot be computed (a non-finite amax, an e8m0 exponent beyond 127, nvfp4's
// all-zero tensor: 0 / 0) is NaN as the recipe's own arithmetic makes it; Stats counts it and
// the group's values dequantize to NaN: never silent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "numerics/format.hpp"
#include "numerics/quant.hpp"

namespace attndev::attention::quant {

using numerics::quant::ElemRounding;

enum class Granularity : std::uint8_t {
  per_tensor,
  per_head,
  row_blocks,
  per_token,
  per_channel,
  row_groups,
  col_groups,
  sage2_q_thread,
  sage2_k_thread,
};

enum class ScaleRule : std::uint8_t {
  amax,
  amax_recip,
  amax_eps,
  amax_div,
  ocp_floor,
  nv_rceil,
  nvfp4,
  ue4m3_recip,
};

const char* granularity_name(Granularity g);
const char* scale_rule_name(ScaleRule r);

struct Spec {
  numerics::Format element = numerics::Format::fp8_e4m3;
  Granularity granularity = Granularity::per_tensor;
  int rows = 1;  // row_blocks, col_groups, sage2_*: rows per block / slice
  int cols = 1;  // row_groups: elements per group along d
  ScaleRule rule = ScaleRule::amax;
  ElemRounding rounding = ElemRounding::nearest_even;
  double qmax = 0.0;  // 0: the element format's largest value (SageAttention2++'s V: 2.25)

  double max_value() const;
};

// What one quantized stage did, over all its elements.
struct Stats {
  std::size_t elements = 0;
  std::size_t saturated = 0;         // elements clamped to the format's largest value
  std::size_t groups = 0;            // scales
  std::size_t zero_scales = 0;       // groups whose scale is 0 (their elements are 0)
  std::size_t nonfinite_scales = 0;  // NaN or inf scales (their elements dequantize to NaN)
  double err_sq = 0.0;               // sum (dequantized - x)^2: the quantization error alone
  double ref_sq = 0.0;               // sum x^2
  double max_abs_err = 0.0;

  double rel_rmse() const;  // sqrt(err_sq / ref_sq), 0 for an all-zero input
  void add(const Stats& other);
};

struct Quantized {
  Spec spec;
  Tensor values;               // (B, H, N, d) element values, exact
  std::vector<double> scales;  // one per group (block scales; nvfp4: the e4m3 s8)
  double tensor_scale = 1.0;   // nvfp4's second level; 1 for every other rule
  std::size_t groups_per_head = 1;
  Stats stats;

  std::size_t group(int b, int h, int r, int c) const;
  // The scale an element is multiplied by: its group's, times the tensor scale (exact in double).
  double scale(int b, int h, int r, int c) const;
  double dequantized(int b, int h, int r, int c) const;
  Tensor dequantized() const;
};

// Empty when spec's block shape tiles a (rows, cols) matrix; else why not, naming the block
// (row_groups of 32 need d a multiple of 32, ...).
std::string tiling_error(const Spec& spec, int rows, int cols);

// Throws std::invalid_argument with tiling_error's text when the shape cannot be tiled.
Quantized quantize(const Tensor& x, const Spec& spec);

}  // namespace attndev::attention::quant
