// The quantized recipes' two GEMMs on a tensor-core profile, for fast_quant.cpp's tiles: QK^T of
// a row block against a block of keys and P V of the rows' P against the block's V, through the
// profile's lane dot-adds on the head's converted operands (quant_operands.hpp):
//   * tc_float_lanes.hpp's float lanes for fp8, fp16 and block-scaled fp8 operands (an fp32 D,
//     or the fp16 D of SageAttention 1 and 2++), several rows per call;
//   * quant_lanes.hpp's kind::mxf4nvf4 lanes for nvfp4 operands (SageAttention3).
// Each result is the reference's f32(dot) bit for bit (test_fast_quant.cpp): what the lanes
// cannot reproduce (a row or key holding inf or NaN or a value that is not an exact float, a
// block scale that is not finite, a D that is not finite) is recomputed by the reference's own
// scalar functions (quant_qk_dot, quant_pv_dot).
#pragma once

#include <vector>

#include "attention/quant_attention.hpp"
#include "attention/quant_operands.hpp"
#include "attention/tc_float_lanes.hpp"

namespace attndev::attention::detail::quant_lane_gemms {

// A recipe's lane chains on one profile.
struct LaneGemms {
  int block_c = 0;
  // The float lanes for fp8 / fp16 / block-scaled fp8 operands (fp16 D where P V accumulates in
  // fp16); null for nvfp4 operands, which run kind::mxf4nvf4's lanes.
  tc_lanes::LaneChainRowsF qk_chain_f = nullptr, pv_chain_f = nullptr;
};

// The chains of recipe r on profile arch (not none), tiles of block_c keys.
LaneGemms make_lane_gemms(const quant::RecipeSpec& r, numerics::mma::Arch arch, int block_c);

// The Q rows of one work item as lane operands, made once per item.
struct QLanes {
  std::vector<float> value_f = {};          // (rows, d) the float lanes' form
  std::vector<tc_lanes::Expo> expo_f = {};  // (rows, d)
  std::vector<float> scale_f = {};          // (rows, d / 16) nvfp4's block scales
  std::vector<char> special = {};           // (rows)
};
void make_q_lanes(const QuantContext& c, int i0, int rows, QLanes& ql);

// S(r, j) = f32(dot) for keys j0 + [0, n[r]) of rows [i0, i0 + rows): s (rows, ld_s).
void qk_lanes(const LaneGemms& g, const QuantContext& c, const QLanes& ql,
              const quant_operands::KeyTiles& kt, int i0, int rows, int j0, const int* n, float* s,
              int ld_s);

// C(r, t) <- the chain over row r's keys [0, act[r]) of P(r, j) V(j0 + j, t), from C: cacc
// (rows, ld_c), pbs[r] row r's P of the block.
void pv_lanes(const LaneGemms& g, const QuantContext& c, const quant_operands::ValueRows& vr,
              int j0, const std::vector<QuantPBlock>& pbs, const int* act, int rows, float* cacc,
              int ld_c);

}  // namespace attndev::attention::detail::quant_lane_gemms
