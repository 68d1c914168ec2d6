// The quantized recipes' GEMMs through the profile's lanes (quant_lane_gemms.hpp).
#include "attention/quant_lane_gemms.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attention/quant_lanes.hpp"
#include "attention/tc_simd_kernels.hpp"
#include "numerics/format.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::detail::quant_lane_gemms {

namespace {

using numerics::Format;
namespace mma = numerics::mma;
using quant::OperandKind;
using quant_operands::float_lane_operands;
using quant_operands::KeyTiles;
using quant_operands::kMxBlock;
using quant_operands::kNvBlock;
using quant_operands::mx_row_exponents;
using quant_operands::ValueRows;
constexpr int kLanes = tc_lanes::kLanes;

std::size_t sz(long long x) {
  return static_cast<std::size_t>(x);
}

// Whether every lane of x[0, n) is the lanes' own result: finite, and not marked special (then
// the caller converts them in one loop that vectorizes, instead of testing each one).
bool lanes_usable(const double* x, const char* special, int n) {
  int bad = 0;
  for (int i = 0; i < n; ++i) bad |= static_cast<int>(!(std::fabs(x[i]) <= DBL_MAX)) | special[i];
  return bad == 0;
}

}  // namespace

LaneGemms make_lane_gemms(const quant::RecipeSpec& r, mma::Arch arch, int block_c) {
  LaneGemms g;
  g.block_c = block_c;
  const mma::Instruction ins = mma::default_instruction(arch);
  if (r.qk == OperandKind::mxfp8) g.qk_chain_f = &tc_lanes::lane_chain_rows_f<mma::Sm100MxF8>;
  if (r.qk == OperandKind::fp8 || r.qk == OperandKind::fp16)
    g.qk_chain_f = tc_lanes::gemm_of(arch, Format::fp8_e4m3, Format::fp8_e4m3).chain_rows_f;
  if (r.pv == OperandKind::mxfp8) g.pv_chain_f = &tc_lanes::lane_chain_rows_f<mma::Sm100MxF8>;
  if (r.pv == OperandKind::fp8 || r.pv == OperandKind::fp16) {
    const mma::Kind kind = r.pv == OperandKind::fp16 ? mma::Kind::f16 : mma::Kind::f8;
    mma::with_profile(arch, ins, kind, [&](auto profile) {
      using P = decltype(profile);
      g.pv_chain_f = r.pv_fp16 ? &tc_lanes::lane_chain_rows_f<P, mma::Output::fp16>
                               : &tc_lanes::lane_chain_rows_f<P>;
    });
  }
  return g;
}

void make_q_lanes(const QuantContext& c, int i0, int rows, QLanes& ql) {
  const int d = c.d;
  const bool mx = c.r.qk == OperandKind::mxfp8, nv = c.r.qk == OperandKind::nvfp4;
  const int emin = numerics::traits(Format::fp8_e4m3).min_exponent;
  ql.value_f.resize(sz(rows) * d);
  ql.expo_f.resize(ql.value_f.size());
  ql.special.assign(sz(rows), 0);
  if (nv) {
    ql.scale_f.resize(sz(rows) * (d / kNvBlock));
    for (int r = 0; r < rows; ++r)
      for (int g = 0; g < d / kNvBlock; ++g)
        ql.scale_f[sz(r) * (d / kNvBlock) + g] =
            f32(c.qp.q.scales[c.qp.q.group(c.b, c.h, i0 + r, 0) + g]);  // e4m3: exact
  }
  std::vector<int> s(sz(d));  // (d) mxfp8's scale exponents
  for (int r = 0; r < rows; ++r) {
    const bool scales_ok = !mx || mx_row_exponents(c.qp.q, c.b, c.h, i0 + r, d, s.data());
    const bool usable =
        float_lane_operands(c.q8 + sz(i0 + r) * d, d, emin, mx ? s.data() : nullptr,
                            ql.value_f.data() + sz(r) * d, ql.expo_f.data() + sz(r) * d);
    ql.special[sz(r)] = !usable || !scales_ok;
  }
}

// S(r, j) for keys j0 + [0, n[r]) of rows [i0, i0 + rows) through the profile's lanes.
void qk_lanes(const LaneGemms& g, const QuantContext& c, const QLanes& ql, const KeyTiles& kt,
              int i0, int rows, int j0, const int* n, float* s, int ld_s) {
  const int d = c.d, ldb = kt.ldb, t = j0 / g.block_c;
  const int groups = (*std::max_element(n, n + rows) + kLanes - 1) / kLanes;
  const char* key_special = kt.special.data() + sz(t) * ldb;  // (ldb)
  std::vector<double> sd(sz(rows) * ldb, 0.0);                // (rows, ldb) S from C = 0
  const std::vector<int> k(sz(rows), d);                      // (rows)
  if (g.qk_chain_f) {
    g.qk_chain_f(ql.value_f.data(), d, ql.expo_f.data(), kt.value_f.data() + kt.tile(t),
                 kt.expo_f.data() + kt.tile(t), ldb, k.data(), rows, groups, sd.data(), ldb);
  } else {                                                                // nvfp4 operands
    const float* ks = kt.scales_f.data() + sz(t) * (d / kNvBlock) * ldb;  // (d / 16, ldb)
    quant_lanes::nvf4_lanes(ql.value_f.data(), d, kt.value_f.data() + kt.tile(t), ldb, k.data(),
                            rows, ql.scale_f.data(), d / kNvBlock, ks, ldb, groups, sd.data(), ldb);
  }
  for (int r = 0; r < rows; ++r) {
    const double* row = sd.data() + sz(r) * ldb;  // (ldb)
    float* out = s + sz(r) * ld_s;                // (n[r])
    if (!ql.special[sz(r)] && lanes_usable(row, key_special, n[r])) {
      for (int j = 0; j < n[r]; ++j) out[j] = f32(row[j]);
      continue;
    }
    for (int j = 0; j < n[r]; ++j) {
      const bool special = ql.special[sz(r)] || key_special[j] || !std::isfinite(row[j]);
      out[j] = f32(special ? quant_qk_dot(c, i0 + r, j0 + j) : row[j]);
    }
  }
}

void pv_lanes(const LaneGemms& g, const QuantContext& c, const ValueRows& vr, int j0,
              const std::vector<QuantPBlock>& pbs, const int* act, int rows, float* cacc,
              int ld_c) {
  const int d = c.d, n_max = *std::max_element(act, act + rows);
  if (n_max == 0) return;
  const int ldb = vr.ldb, groups = ldb / kLanes;
  const bool mx = c.r.pv == OperandKind::mxfp8, nv = c.r.pv == OperandKind::nvfp4;
  const Format pv_format = c.r.pv == OperandKind::fp16 ? Format::fp16 : Format::fp8_e4m3;
  const int emin = numerics::traits(pv_format).min_exponent;
  std::vector<char> col_special(sz(ldb), 0);  // (ldb)
  if (mx)
    for (int blk = j0 / kMxBlock; blk * kMxBlock < j0 + n_max; ++blk)
      for (int t = 0; t < d; ++t) col_special[sz(t)] |= vr.scale_special[sz(blk) * ldb + t];
  if (std::any_of(vr.key_special.begin() + j0, vr.key_special.begin() + j0 + n_max,
                  [](char x) { return x != 0; }))
    std::fill(col_special.begin(), col_special.end(), 1);
  const std::size_t at = sz(j0) * ldb;          // V's rows from key j0: (n, ldb)
  std::vector<int> ps(sz(n_max));               // (n) a row of P's mxfp8 scale exponents
  std::vector<float> paf(sz(rows) * n_max);     // (rows, n) P in the float lanes' form
  std::vector<tc_lanes::Expo> pef(paf.size());  // (rows, n)
  const int ld_ps = n_max / kNvBlock + 1;
  std::vector<float> psf(nv ? sz(rows) * ld_ps : 0);  // (rows, n / 16) nvfp4's P scales
  std::vector<double> cd(sz(rows) * ldb, 0.0);        // (rows, ldb) C, then D
  std::vector<char> row_special(sz(rows), 0);         // (rows)
  for (int r = 0; r < rows; ++r) {
    const int n = act[r];
    if (n == 0) continue;
    const QuantPBlock& pb = pbs[sz(r)];
    const std::size_t at_p = sz(r) * n_max;
    if (nv) {  // kind::mxf4nvf4's lanes read the values alone: straight to floats
      int bad = 0;
      for (int j = 0; j < n; ++j) {
        const double x = pb.elem[sz(j)];
        paf[at_p + sz(j)] = static_cast<float>(x);
        bad |= static_cast<int>(!(std::fabs(x) <= DBL_MAX)) |
               static_cast<int>(static_cast<double>(paf[at_p + sz(j)]) != x);
      }
      row_special[sz(r)] = bad != 0;
      for (int blk = 0; blk * kNvBlock < n; ++blk)
        psf[sz(r) * ld_ps + blk] = f32(pb.scale[sz(blk)]);  // e4m3: exact
    } else {
      if (mx)
        for (int j = 0; j < n; ++j) ps[sz(j)] = pb.exps[sz(j / kMxBlock)];
      row_special[sz(r)] = !float_lane_operands(pb.elem.data(), n, emin, mx ? ps.data() : nullptr,
                                                paf.data() + at_p, pef.data() + at_p);
    }
    const float* cr = cacc + sz(r) * ld_c;  // (d)
    std::copy(cr, cr + d, cd.begin() + static_cast<std::ptrdiff_t>(sz(r) * ldb));
  }
  if (g.pv_chain_f) {
    g.pv_chain_f(paf.data(), n_max, pef.data(), vr.value_f.data() + at, vr.expo_f.data() + at, ldb,
                 act, rows, groups, cd.data(), ldb);
  } else {                                                           // nvfp4 operands
    const float* vs = vr.scales_f.data() + sz(j0 / kNvBlock) * ldb;  // (n / 16, ldb)
    quant_lanes::nvf4_lanes(paf.data(), n_max, vr.value_f.data() + at, ldb, act, rows, psf.data(),
                            ld_ps, vs, ldb, groups, cd.data(), ldb);
  }
  for (int r = 0; r < rows; ++r) {
    const int n = act[r];
    if (n == 0) continue;
    float* cr = cacc + sz(r) * ld_c;             // (d)
    const double* dr = cd.data() + sz(r) * ldb;  // (ldb)
    if (!row_special[sz(r)] && lanes_usable(dr, col_special.data(), d)) {
      for (int t = 0; t < d; ++t) cr[t] = f32(dr[t]);
      continue;
    }
    for (int t = 0; t < d; ++t) {
      const bool special = row_special[sz(r)] || col_special[sz(t)] || !std::isfinite(dr[t]);
      cr[t] = f32(special ? quant_pv_dot(c, pbs[sz(r)], j0, n, t, cr[t]) : dr[t]);
    }
  }
}

}  // namespace attndev::attention::detail::quant_lane_gemms
