// The quantized recipes' operands as the tensor-core lanes read them (fast_quant.cpp): each
// element value (x 2^s where a power-of-two block scale is folded in) with its exponent, in the
// float lanes' form (tc_float_lanes.hpp), and per key which lanes the lanes cannot reproduce (an
// operand that is not finite or not an exact float, a block scale that is not finite): those go
// to the reference's scalar functions.
//
// K and V are the same for every row block of a head, so a head's are converted once
// (HeadOperands), not once per (row block, key block): at N = 4096 with Br = 64 that is 64
// conversions of every key fewer, and the K^T transposes with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention/quant_attention.hpp"
#include "attention/tc_float_lanes.hpp"

namespace attndev::attention::detail::quant_operands {

inline constexpr int kMxBlock = 32, kNvBlock = 16;

// x[0, n) in the float lanes' form: value x[i] 2^s[i] as a float and exponent
// max(e(x[i]), emin) + s[i] (a zero's: kZeroExponentF), with a power-of-two block scale folded in
// (s: nullptr for none; |s[i]| <= 127), in a loop that vectorizes. False if an x is not finite or
// a value is not an exact float (a scale folded in beyond fp32's range): the lanes that read it
// then take the scalar functions.
bool float_lane_operands(const double* x, int n, int emin, const int* s, float* value,
                         tc_lanes::Expo* expo);

// mxfp8's scale exponents of one row along d (one scale per 32); false if a scale is not finite.
bool mx_row_exponents(const quant::Quantized& x, int b, int h, int row, int d, int* s);

// One head's K^T as the QK lanes read it: tiles of Bc keys, keys in lanes (ldb of them, the
// padding zeros), d rows per tile.
struct KeyTiles {
  int d = 0, ldb = 0;
  std::vector<float> value_f = {};          // (tiles, d, ldb) the float lanes' form
  std::vector<tc_lanes::Expo> expo_f = {};  // (tiles, d, ldb)
  std::vector<float> scales_f = {};         // (tiles, d / 16, ldb) nvfp4's block scales
  std::vector<char> special = {};           // (tiles, ldb)

  std::size_t tile(int t) const { return static_cast<std::size_t>(t) * d * ldb; }
};

// One head's V as the P V lanes read it: one row per key, output columns in lanes (ldb, the
// padding zeros).
struct ValueRows {
  int ldb = 0;
  std::vector<float> value_f = {};          // (N_kv, ldb) the float lanes' form
  std::vector<tc_lanes::Expo> expo_f = {};  // (N_kv, ldb)
  std::vector<char> key_special = {};       // (N_kv) an operand not finite or not exact
  std::vector<char> scale_special = {};     // (ceil(N_kv / 32), ldb) mxfp8: a scale not finite
  std::vector<float> scales_f = {};         // (ceil(N_kv / 16), ldb) nvfp4's block scales
};

struct HeadOperands {
  KeyTiles k;
  ValueRows v;
};

// Head (c.b, c.h)'s K (when qk, tiles of bc keys) and V (when pv) in the float lanes' form.
HeadOperands make_head_operands(const QuantContext& c, int bc, bool qk, bool pv);

}  // namespace attndev::attention::detail::quant_operands
