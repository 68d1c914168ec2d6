// The quantized recipes' lane operands (quant_operands.hpp): a head's K^T tiles and V rows,
// converted once per head, and the conversions fast_quant.cpp also runs on Q and P rows.
#include "attention/quant_operands.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention/tc_float_lanes.hpp"
#include "numerics/format.hpp"

namespace attndev::attention::detail::quant_operands {

namespace {

using numerics::Format;
using quant::OperandKind;

std::size_t sz(long long x) {
  return static_cast<std::size_t>(x);
}

KeyTiles make_key_tiles(const QuantContext& c, int bc) {
  const quant::Quantized& k = c.qp.k;
  const int d = c.d, n_kv = c.qp.p->shape.seq_kv, tiles = (n_kv + bc - 1) / bc;
  const bool mx = c.r.qk == OperandKind::mxfp8, nv = c.r.qk == OperandKind::nvfp4;
  const int emin = numerics::traits(Format::fp8_e4m3).min_exponent;
  KeyTiles kt;
  kt.d = d;
  kt.ldb = (bc + tc_lanes::kLanes - 1) / tc_lanes::kLanes * tc_lanes::kLanes;
  const std::size_t all = kt.tile(tiles);
  kt.value_f.assign(all, 0.0f);
  kt.expo_f.assign(all, tc_lanes::kZeroExponentF);
  if (nv) kt.scales_f.assign(sz(tiles) * (d / kNvBlock) * kt.ldb, 0.0f);
  kt.special.assign(sz(tiles) * kt.ldb, 0);
  std::vector<int> se(sz(d));              // (d) one key's scale exponents
  std::vector<float> kvf(sz(d));           // (d) its operands
  std::vector<tc_lanes::Expo> kxf(sz(d));  // (d) their exponents
  for (int j = 0; j < n_kv; ++j) {
    const int t = j / bc, lane = j % bc;
    const std::size_t at = kt.tile(t) + sz(lane);  // (d) with stride ldb: key j's column of K^T
    const bool scales_ok = !mx || mx_row_exponents(k, c.b, c.h, j, d, se.data());
    const bool usable = float_lane_operands(c.k8 + sz(j) * d, d, emin, mx ? se.data() : nullptr,
                                            kvf.data(), kxf.data());
    kt.special[sz(t) * kt.ldb + lane] = !usable || !scales_ok;
    for (int i = 0; i < d; ++i) {
      kt.value_f[at + sz(i) * kt.ldb] = kvf[sz(i)];
      kt.expo_f[at + sz(i) * kt.ldb] = kxf[sz(i)];
    }
    if (nv)
      for (int g = 0; g < d / kNvBlock; ++g)
        kt.scales_f[(sz(t) * (d / kNvBlock) + g) * kt.ldb + lane] =
            static_cast<float>(k.scales[k.group(c.b, c.h, j, 0) + g]);  // e4m3 (or NaN): exact
  }
  return kt;
}

ValueRows make_value_rows(const QuantContext& c) {
  const quant::Quantized& vq = c.qp.v;
  const int d = c.d, n_kv = c.qp.p->shape.seq_kv;
  const bool mx = c.r.pv == OperandKind::mxfp8, nv = c.r.pv == OperandKind::nvfp4;
  const Format format = c.r.pv == OperandKind::fp16 ? Format::fp16 : Format::fp8_e4m3;
  const int emin = numerics::traits(format).min_exponent;
  ValueRows vr;
  vr.ldb = (d + tc_lanes::kLanes - 1) / tc_lanes::kLanes * tc_lanes::kLanes;
  const std::size_t all = sz(n_kv) * vr.ldb;
  vr.value_f.assign(all, 0.0f);
  vr.expo_f.assign(all, tc_lanes::kZeroExponentF);
  vr.key_special.assign(sz(n_kv), 0);
  if (mx) vr.scale_special.assign(sz((n_kv + kMxBlock - 1) / kMxBlock) * vr.ldb, 0);
  if (nv) {
    vr.scales_f.assign(sz((n_kv + kNvBlock - 1) / kNvBlock) * vr.ldb, 0.0f);
    for (int j = 0; j < n_kv; j += kNvBlock)
      for (int t = 0; t < d; ++t)
        vr.scales_f[sz(j / kNvBlock) * vr.ldb + t] =
            static_cast<float>(vq.scales[vq.group(c.b, c.h, j, t)]);  // e4m3 (or NaN): exact
  }
  std::vector<int> se(sz(d), 0);  // (d) mxfp8: the scale exponents of key j's group
  for (int j = 0; j < n_kv; ++j) {
    if (mx && j % kMxBlock == 0)
      for (int t = 0; t < d; ++t) {
        const double scale = vq.scale(c.b, c.h, j, t);
        vr.scale_special[sz(j / kMxBlock) * vr.ldb + t] = !std::isfinite(scale);
        se[sz(t)] = std::isfinite(scale) ? std::ilogb(scale) : 0;
      }
    const std::size_t row = sz(j) * vr.ldb;
    vr.key_special[sz(j)] =
        !float_lane_operands(c.v8 + sz(j) * d, d, emin, mx ? se.data() : nullptr,
                             vr.value_f.data() + row, vr.expo_f.data() + row);
  }
  return vr;
}

}  // namespace

bool float_lane_operands(const double* x, int n, int emin, const int* s, float* value,
                         tc_lanes::Expo* expo) {
  int bad = 0;  // a loop that vectorizes (no && chain)
  for (int i = 0; i < n; ++i) {
    std::uint64_t u;
    std::memcpy(&u, &x[i], sizeof u);
    const int field = static_cast<int>((u >> 52) & 0x7FFu);
    const int scale = s ? s[i] : 0;  // |s| <= 127: 2^s and the sum below are exact
    const std::uint64_t bits = static_cast<std::uint64_t>(scale + 1023) << 52;
    double p2;
    std::memcpy(&p2, &bits, sizeof p2);
    const double v = x[i] * p2;
    value[i] = static_cast<float>(v);
    // Not finite, or not an exact float (a scale folded in beyond fp32's range): no lane takes it.
    bad |= static_cast<int>(field == 0x7FF) | static_cast<int>(static_cast<double>(value[i]) != v);
    expo[i] = v == 0 ? tc_lanes::kZeroExponentF
                     : static_cast<tc_lanes::Expo>(std::max(field - 1023, emin) + scale);
  }
  return bad == 0;
}

bool mx_row_exponents(const quant::Quantized& x, int b, int h, int row, int d, int* s) {
  bool ok = true;
  for (int g = 0; g * kMxBlock < d; ++g) {
    const double scale = x.scale(b, h, row, g * kMxBlock);
    ok = ok && std::isfinite(scale);
    const int e = std::isfinite(scale) ? std::ilogb(scale) : 0;
    std::fill(s + g * kMxBlock, s + std::min(d, (g + 1) * kMxBlock), e);
  }
  return ok;
}

HeadOperands make_head_operands(const QuantContext& c, int bc, bool qk, bool pv) {
  HeadOperands h;
  if (qk) h.k = make_key_tiles(c, bc);
  if (pv) h.v = make_value_rows(c);
  return h;
}

}  // namespace attndev::attention::detail::quant_operands
