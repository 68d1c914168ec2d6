#include "attention/quant_schemes.hpp"

#include <iterator>

namespace attndev::attention::quant {

namespace {

using numerics::Format;
using numerics::quant::ElemRounding;

constexpr Spec spec(Format f, Granularity g, int rows, int cols, ScaleRule rule,
                    ElemRounding rounding = ElemRounding::nearest_even) {
  return {f, g, rows, cols, rule, rounding, 0.0};
}

constexpr ElemRounding kRne = ElemRounding::nearest_even;
constexpr ElemRounding kAway = ElemRounding::nearest_away;
constexpr ElemRounding kTriton = ElemRounding::half_add_trunc;
constexpr Granularity kLast = Granularity::row_groups;

constexpr NamedScheme kSchemes[] = {
    {"mxfp8-e4m3", spec(Format::fp8_e4m3, kLast, 1, 32, ScaleRule::ocp_floor, kRne), false,
     "OCP MX v1.0: blocks of 32, e8m0 scale 2^(floor(log2 amax) - 8), e4m3 to nearest even, "
     "saturating at 448"},
    {"mxfp8-e4m3-rna", spec(Format::fp8_e4m3, kLast, 1, 32, ScaleRule::ocp_floor, kAway), false,
     "mxfp8-e4m3 with ties away from zero (microsoft/microxcaling's default round=\"nearest\")"},
    {"mxfp8-e4m3-rceil", spec(Format::fp8_e4m3, kLast, 1, 32, ScaleRule::nv_rceil, kRne), false,
     "NVIDIA's MXFP8: blocks of 32, e8m0 scale 2^ceil(log2(amax / 448)) (RCEIL), e4m3 RNE"},
    {"mxfp8-e5m2", spec(Format::fp8_e5m2, kLast, 1, 32, ScaleRule::ocp_floor, kRne), false,
     "OCP MX v1.0 e5m2: scale 2^(floor(log2 amax) - 15), saturating at 57344"},
    {"mxfp6-e2m3", spec(Format::fp6_e2m3, kLast, 1, 32, ScaleRule::ocp_floor, kRne), false,
     "OCP MX v1.0 fp6 e2m3: scale 2^(floor(log2 amax) - 2), saturating at 7.5"},
    {"mxfp6-e3m2", spec(Format::fp6_e3m2, kLast, 1, 32, ScaleRule::ocp_floor, kRne), false,
     "OCP MX v1.0 fp6 e3m2: scale 2^(floor(log2 amax) - 4), saturating at 28"},
    {"mxfp4", spec(Format::fp4_e2m1, kLast, 1, 32, ScaleRule::ocp_floor, kRne), false,
     "OCP MX v1.0 fp4 e2m1: scale 2^(floor(log2 amax) - 2), saturating at 6"},
    {"nvfp4", spec(Format::fp4_e2m1, kLast, 1, 16, ScaleRule::nvfp4, kRne), false,
     "NVFP4 as torchao computes it: blocks of 16, e4m3 block scale of amax / 6 under the fp32 "
     "tensor scale amax / (448 * 6); the scales returned are block scale x tensor scale"},
    {"nvfp4-sage3", spec(Format::fp4_e2m1, kLast, 1, 16, ScaleRule::ue4m3_recip, kRne), false,
     "SageAttention3's NVFP4: blocks of 16, scale e4m3(amax / 6), no tensor scale, x * (1 / s)"},
    {"fp8-e4m3-per-tensor", spec(Format::fp8_e4m3, Granularity::per_tensor, 1, 1, ScaleRule::amax),
     false, "one fp32 scale amax / 448 for the whole array (FA-3's per-tensor fp8 baseline)"},
    {"fp8-e4m3-per-token", spec(Format::fp8_e4m3, Granularity::per_token, 1, 1, ScaleRule::amax),
     false, "one fp32 scale amax / 448 per vector along the last axis"},
    {"fp8-e4m3-per-block-64",
     spec(Format::fp8_e4m3, Granularity::row_blocks, 64, 1, ScaleRule::amax), true,
     "FA-3's paper: one fp32 scale amax / 448 per block of 64 rows x d (Br or Bc = 64)"},
    {"fp8-e4m3-per-channel",
     spec(Format::fp8_e4m3, Granularity::per_channel, 1, 1, ScaleRule::amax_recip), true,
     "SageAttention2's V: one scale amax / 448 per channel (column) over all rows, x * (448 / "
     "amax)"},
    {"int8-per-block-128",
     spec(Format::int8, Granularity::row_blocks, 128, 1, ScaleRule::amax_div, kTriton), true,
     "SageAttention's Q: blocks of 128 rows x d, scale amax / 127, x / s + 0.5 sign, truncated"},
    {"int8-per-block-64",
     spec(Format::int8, Granularity::row_blocks, 64, 1, ScaleRule::amax_div, kTriton), true,
     "SageAttention's K: blocks of 64 rows x d, as int8-per-block-128"},
    {"int8-per-thread-q",
     spec(Format::int8, Granularity::sage2_q_thread, 32, 1, ScaleRule::amax_eps, kTriton), true,
     "SageAttention2's per-thread Q: in each 32-row slice, rows with equal index mod 8 share "
     "amax / 127 + 1e-7"},
    {"int8-per-thread-k",
     spec(Format::int8, Granularity::sage2_k_thread, 64, 1, ScaleRule::amax_eps, kTriton), true,
     "SageAttention2's per-thread K: in each 64-row block, rows 8j + 2t and 8j + 2t + 1 share "
     "scale t"},
    {"int4-per-thread-q",
     spec(Format::int4, Granularity::sage2_q_thread, 32, 1, ScaleRule::amax_eps, kTriton), true,
     "int8-per-thread-q with int4 elements (amax / 7 + 1e-7)"},
    {"int4-per-thread-k",
     spec(Format::int4, Granularity::sage2_k_thread, 64, 1, ScaleRule::amax_eps, kTriton), true,
     "int8-per-thread-k with int4 elements"},
};

}  // namespace

std::span<const NamedScheme> named_schemes() {
  return kSchemes;
}

const NamedScheme* find_scheme(std::string_view name) {
  for (const NamedScheme& s : kSchemes)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace attndev::attention::quant
