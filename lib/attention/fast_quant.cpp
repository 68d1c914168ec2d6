// The quantized recipes' loop in its fast form: quant_attention.cpp's reference loop over whole
// tiles (a block of Br query rows against a block of Bc keys) instead of one row and one key at
// a time. Every element sees the same operations in the same order, so the two forms are
// bit-identical (test_fast_quant.cpp runs both on every recipe, profile and random shapes):
//   * QK^T without a tensor-core profile (or with integer operands, whose sums are exact): the
//     fast path's float tile (kernels.hpp qk_block: one lane per key, each an FMA chain over d
//     in order, as the reference's fma_chain). INT8/INT4 products summed in float are exact
//     while d * 127^2 < 2^24 (quant_fast_covers), so the float chain equals the exact int32 sum.
//   * QK^T and P V on a profile: 16 keys (or output columns) per call of the model's dot-adds
//     (tc_float_lanes.hpp lane_chain_f for an fp32 D, whose lanes skip to the scalar functions
//     where an operand is not an exact float; tc_lanes.hpp's double lane_chain for an fp16 D;
//     quant_lanes.hpp for kind::mxf4nvf4).
//     Block-scaled fp8 folds its power-of-two scales into the operands: x 2^s has exponent
//     e + s whatever the format's emin clamp did to e (the clamp is applied before the fold),
//     and (x 2^sa)(y 2^sb) 2^(F - E) equals x y 2^(F - E + sa + sb) exactly (no double under-
//     or overflow for e4m3 values and e8m0 scales), which is mma::dot_block_scaled's term.
//   * P V without a profile: kernels.hpp pv_block (one lane per output column, keys in order),
//     or the same chain with each step rounded to fp16 (an fp16 accumulator).
//   * the softmax and P's quantization: loops over the keys of a row with selects instead of
//     branches; the row max, the row sum l and the stage statistics stay sequential sums in key
//     order (their rounding depends on the order).
// Whatever the lanes cannot reproduce goes back to the reference's own scalar functions: a
// lane whose D is not finite, every lane of an operand holding inf or NaN (a zero times inf is
// skipped by the lanes), a block-scaled lane whose scale is not finite, and a row of P holding
// a non-finite value (quantize_p_row).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attention/kernels.hpp"
#include "attention/quant_attention.hpp"
#include "attention/quant_lanes.hpp"
#include "attention/tc_simd_kernels.hpp"
#include "attention/rows/mask.hpp"
#include "numerics/float_rounder.hpp"
#include "numerics/math.hpp"
#include "numerics/quant.hpp"

namespace attndev::attention::detail {

namespace {

using numerics::Format;
namespace mma = numerics::mma;
namespace nq = numerics::quant;
using quant::OperandKind;
using quant::ProbForm;
using quant::PvForm;
using quant::ScoreForm;

constexpr float kNegInf = -INFINITY;
constexpr int kMxBlock = 32, kNvBlock = 16, kLanes = tc_lanes::kLanes;
// SageAttention3's P scaling, as quant_attention.cpp: P in [0, 448 * 6].
constexpr double kSage3PMax = 448.0 * 6.0;

bool is_block_scaled(OperandKind k) {
  return k == OperandKind::mxfp8 || k == OperandKind::nvfp4;
}
bool is_integer(OperandKind k) {
  return k == OperandKind::int8 || k == OperandKind::int4;
}
std::size_t sz(long long x) {
  return static_cast<std::size_t>(x);
}

// What every work item of one run reads.
struct Shared {
  const QuantProblem& qp;
  const quant::RecipeSpec& r;
  const Problem& p;
  bool qk_lanes = false, pv_lanes = false;
  // The float GEMMs' operands: element values, or the dequantized values of the block-scaled
  // kinds without a profile. q (B*H, N_q, d), K^T tiles (B*H, blocks, d, padded) per Bc keys,
  // v (B*H, N_kv, ld_v).
  Packed<float> pk = {};
  std::vector<float> sq = {}, sk = {};  // (B*H, N_q), (B*H, N_kv): R32 of row i's / key j's scale
  // The profile's lanes for fp8 / fp16 / block-scaled fp8 operands (fp16 D where P V
  // accumulates in fp16); kind::mxf4nvf4 runs quant_lanes::nvf4_lanes instead.
  tc_lanes::LaneChain qk_chain = nullptr, pv_chain = nullptr;
  // The same profiles in float lanes (tc_float_lanes.hpp), where the chain has them (an fp32 D):
  // used instead of qk_chain / pv_chain when set.
  tc_lanes::LaneChainF qk_chain_f = nullptr, pv_chain_f = nullptr;
  numerics::FloatRounder p_round = {};  // P's element format, saturating
};

// ---- QK^T ------------------------------------------------------------------------------------

// Lane operands of x[0, n): value x 2^s[i] and exponent max(e(x), emin) + s[i] (a zero:
// tc_lanes::kZeroExponent), as the tensor-core lanes read them, with a power-of-two scale 2^s[i]
// folded in (s: nullptr for none), in loops that vectorize. Returns how many x are not finite.
int lane_operands(const double* x, int n, double emin, const int* s, double* value, double* expo) {
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    std::uint64_t u;
    std::memcpy(&u, &x[i], sizeof u);
    const int field = static_cast<int>((u >> 52) & 0x7FFu);
    bad += field == 0x7FF;
    const double e = std::max(static_cast<double>(field - 1023), emin);
    value[i] = x[i];
    expo[i] = x[i] == 0 ? tc_lanes::kZeroExponent : e;
  }
  if (s)
    for (int i = 0; i < n; ++i) {
      const std::uint64_t bits = static_cast<std::uint64_t>(s[i] + 1023) << 52;  // 2^s, |s| <= 127
      double p2;
      std::memcpy(&p2, &bits, sizeof p2);
      value[i] = value[i] * p2;
      expo[i] = expo[i] + s[i];  // a zero's stays far below every product's
    }
  return bad;
}

// Lane operands (lane_operands) in the float lanes' form: values as floats, exponents as int32
// (a zero's: kZeroExponentF). False if a value is not an exact float (a scale folded in beyond
// fp32's range, NaN): its lanes then take the scalar functions.
bool float_lane_operands(const double* value, const double* expo, int n, float* vf,
                         std::int32_t* ef) {
  bool exact = true;
  for (int i = 0; i < n; ++i) {
    vf[i] = static_cast<float>(value[i]);
    exact = exact && static_cast<double>(vf[i]) == value[i];
    ef[i] = value[i] == 0 ? tc_lanes::kZeroExponentF : static_cast<std::int32_t>(expo[i]);
  }
  return exact;
}

// mxfp8's scale exponents of one row along d (one scale per 32); false if a scale is not finite.
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

// The Q rows of one work item as lane operands, made once per item.
struct QLanes {
  std::vector<double> value = {}, expo = {};  // (rows, d)
  std::vector<float> value_f = {};            // (rows, d) the float lanes' form (qk_chain_f)
  std::vector<std::int32_t> expo_f = {};      // (rows, d)
  std::vector<char> special = {};             // (rows)
};

void make_q_lanes(const Shared& f, const QuantContext& c, int i0, int rows, QLanes& ql) {
  const int d = c.d;
  const bool mx = f.r.qk == OperandKind::mxfp8;
  const double emin = numerics::traits(Format::fp8_e4m3).min_exponent;
  ql.value.resize(sz(rows) * d);
  ql.expo.resize(ql.value.size());
  ql.special.assign(sz(rows), 0);
  if (f.qk_chain_f) {
    ql.value_f.resize(ql.value.size());
    ql.expo_f.resize(ql.value.size());
  }
  std::vector<int> s(sz(d));  // (d)
  for (int r = 0; r < rows; ++r) {
    const bool scales_ok = !mx || mx_row_exponents(f.qp.q, c.b, c.h, i0 + r, d, s.data());
    const int bad = lane_operands(c.q8 + sz(i0 + r) * d, d, emin, mx ? s.data() : nullptr,
                                  ql.value.data() + sz(r) * d, ql.expo.data() + sz(r) * d);
    ql.special[sz(r)] = bad != 0 || !scales_ok;
    if (f.qk_chain_f)
      ql.special[sz(r)] |=
          !float_lane_operands(ql.value.data() + sz(r) * d, ql.expo.data() + sz(r) * d, d,
                               ql.value_f.data() + sz(r) * d, ql.expo_f.data() + sz(r) * d);
  }
}

// S(r, j) for keys j0 + [0, n[r]) of rows [i0, i0 + rows) through the profile's lanes.
void qk_lanes(const Shared& f, const QuantContext& c, const QLanes& ql, int i0, int rows, int j0,
              const int* n, float* s, int ld_s) {
  const quant::Quantized &q = f.qp.q, &k = f.qp.k;
  const int d = c.d, n_max = *std::max_element(n, n + rows);
  const int ldb = (n_max + kLanes - 1) / kLanes * kLanes, groups = d / kNvBlock;
  const bool mx = f.r.qk == OperandKind::mxfp8, nv = f.r.qk == OperandKind::nvfp4;
  const double emin = numerics::traits(Format::fp8_e4m3).min_exponent;
  const bool in_float = f.qk_chain_f != nullptr;
  const std::size_t tile = sz(d) * ldb;
  std::vector<double> kb(in_float ? 0 : tile, 0.0);            // (d, ldb) K^T as read
  std::vector<double> ke(kb.size(), tc_lanes::kZeroExponent);  // (d, ldb) its exponents
  std::vector<float> kbf(in_float ? tile : 0, 0.f);            // (d, ldb) as floats
  std::vector<std::int32_t> kef(kbf.size(), tc_lanes::kZeroExponentF);
  std::vector<double> ks(nv ? sz(groups) * ldb : 0, 0.0);  // (d / 16, ldb) nvfp4 K scales
  std::vector<char> key_special(sz(ldb), 0);               // (ldb)
  std::vector<double> kv(sz(d)), kx(sz(d));                // (d) one key's operands
  std::vector<int> se(sz(d));                              // (d) its scale exponents
  std::vector<float> kvf(sz(d));                           // (d) one key as floats
  std::vector<std::int32_t> kxf(sz(d));                    // (d) its exponents
  for (int j = 0; j < n_max; ++j) {
    const bool scales_ok = !mx || mx_row_exponents(k, c.b, c.h, j0 + j, d, se.data());
    const int bad = lane_operands(c.k8 + sz(j0 + j) * d, d, emin, mx ? se.data() : nullptr,
                                  kv.data(), kx.data());
    key_special[sz(j)] = bad != 0 || !scales_ok;
    if (in_float) {
      key_special[sz(j)] |= !float_lane_operands(kv.data(), kx.data(), d, kvf.data(), kxf.data());
      for (int t = 0; t < d; ++t) {  // K^T: keys in lanes
        kbf[sz(t) * ldb + j] = kvf[sz(t)];
        kef[sz(t) * ldb + j] = kxf[sz(t)];
      }
    } else {
      for (int t = 0; t < d; ++t) {
        kb[sz(t) * ldb + j] = kv[sz(t)];
        ke[sz(t) * ldb + j] = kx[sz(t)];
      }
    }
    if (nv)
      for (int g = 0; g < groups; ++g)
        ks[sz(g) * ldb + j] = k.scales[k.group(c.b, c.h, j0 + j, 0) + g];
  }
  std::vector<double> row(in_float ? sz(ldb) : 0);  // (ldb) one row of S from the float lanes
  for (int r = 0; r < rows; ++r) {
    const int i = i0 + r;
    if (in_float) {
      std::fill(row.begin(), row.end(), 0.0);
      f.qk_chain_f(ql.value_f.data() + sz(r) * d, ql.expo_f.data() + sz(r) * d, kbf.data(),
                   kef.data(), ldb, d, (n[r] + kLanes - 1) / kLanes, row.data());
      for (int j = 0; j < n[r]; ++j) {
        const bool special = ql.special[sz(r)] || key_special[sz(j)] || !std::isfinite(row[sz(j)]);
        s[sz(r) * ld_s + j] = f32(special ? quant_qk_dot(c, i, j0 + j) : row[sz(j)]);
      }
      continue;
    }
    const double* qa = ql.value.data() + sz(r) * d;                        // (d)
    const double* qe = ql.expo.data() + sz(r) * d;                         // (d)
    const double* qs = nv ? &q.scales[q.group(c.b, c.h, i, 0)] : nullptr;  // (d / 16)
    for (int c0 = 0; c0 < n[r]; c0 += kLanes) {
      alignas(64) double acc[kLanes] = {};
      if (nv) {
        quant_lanes::nvf4_lanes(qa, kb.data() + c0, ldb, d, qs, ks.data() + c0, ldb, acc);
      } else {
        f.qk_chain(qa, qe, kb.data() + c0, ke.data() + c0, ldb, d, acc);
      }
      for (int l = 0; l < kLanes && c0 + l < n[r]; ++l) {
        const int j = c0 + l;
        const bool special = ql.special[sz(r)] || key_special[sz(j)] || !std::isfinite(acc[l]);
        s[sz(r) * ld_s + j] = f32(special ? quant_qk_dot(c, i, j0 + j) : acc[l]);
      }
    }
  }
}

// The dots of one tile, as the reference's f32(dot).
void qk_tile(const Shared& f, const QuantContext& c, const QLanes& ql, int i0, int rows, int j0,
             const int* n, float* s, int ld_s) {
  if (f.qk_lanes) {
    qk_lanes(f, c, ql, i0, rows, j0, n, s, ld_s);
    return;
  }
  const int bh = c.b * f.p.shape.heads + c.h;
  qk_block<float, true>(f.pk.q_head(bh) + sz(i0) * f.pk.d, rows, f.pk.d,
                        f.pk.kt_tile(bh, j0 / f.p.block_c), f.pk.padded, s, ld_s);
}

// ---- One row: score form, softmax, P ---------------------------------------------------------

// s (the dots, n keys from j0) becomes the softmax's argument; e: folded's per-key scale.
void score_form(const Shared& f, const QuantContext& c, int i, int j0, int n, float* s, float* e) {
  const std::size_t bh = sz(c.b) * f.p.shape.heads + c.h;
  const float sqi = f.sq.empty() ? 1.0f : f.sq[bh * f.p.shape.seq_q + i];
  const float* sk = f.sk.empty() ? nullptr : f.sk.data() + bh * f.p.shape.seq_kv + j0;  // (n)
  const double* dsr = f.qp.ds.empty() ? nullptr : f.qp.delta_s_row(c.b, c.h, i) + j0;   // (n)
  const float sl2 = c.sl2;
  switch (f.r.score) {
    case ScoreForm::dequant:
    case ScoreForm::prescaled:
      for (int j = 0; j < n; ++j) s[j] = s[j] * (sqi * sk[j]);
      break;
    case ScoreForm::folded:
      // quant_attention.cpp's scores(): dS joins the dequantized scores, not the integer dot.
      for (int j = 0; j < n; ++j) {
        const float qk = sqi * sk[j];
        if (dsr && dsr[j] != 0.0) {
          s[j] = s[j] * qk + f32(dsr[j]);
          e[j] = sl2;
        } else {
          e[j] = sl2 * qk;
        }
      }
      break;
    case ScoreForm::block_scaled:
      if (dsr)
        for (int j = 0; j < n; ++j) s[j] = dsr[j] == 0.0 ? s[j] : s[j] + f32(dsr[j]);
      break;
  }
}

float row_max(const float* x, int n) {
  float m = kNegInf;
  for (int j = 0; j < n; ++j) m = m < x[j] ? x[j] : m;
  return m;
}
float row_sum(float l, const float* x, int n) {
  for (int j = 0; j < n; ++j) l += x[j];
  return l;
}

// s[j] = exp2(fma(s[j], e ? e[j] : scale, shift)), or exp2(s[j] + shift) unfused. Flattened so
// that exp2_f32 is inlined and the loops vectorize (GCC keeps it a call in softmax_row).
[[gnu::flatten]] void exp2_rows(float* s, const float* e, float scale, float shift, int n,
                                bool fused = true) {
  if (!fused) {
    for (int j = 0; j < n; ++j) s[j] = numerics::exp2_f32(s[j] + shift);
  } else if (e) {
    for (int j = 0; j < n; ++j) s[j] = numerics::exp2_f32(std::fma(s[j], e[j], shift));
  } else {
    for (int j = 0; j < n; ++j) s[j] = numerics::exp2_f32(std::fma(s[j], scale, shift));
  }
}

// quant_attention.cpp's softmax_step, with the per-key loops vectorizable (z: scratch (n)).
bool softmax_row(const Shared& f, float sl2, QuantRowState& st, float* s, const float* e, float* z,
                 int n) {
  const quant::RecipeSpec& r = f.r;
  const float off = f32(-r.offset);
  const float* by = s;
  if (r.score == ScoreForm::folded && !r.raw_max) {
    for (int j = 0; j < n; ++j) z[j] = std::fma(s[j], e[j], off);
    by = z;
  }
  const float bm = row_max(by, n);
  const float m_new = st.m < bm ? bm : st.m;
  if (m_new == kNegInf) return false;
  const bool first = st.m == kNegInf;
  switch (r.score) {
    case ScoreForm::dequant:
    case ScoreForm::block_scaled: {
      const bool sage3 = r.prob == ProbForm::nvfp4_blocks;
      st.ms = sage3 ? std::fma(m_new, sl2, f32(-std::log2(kSage3PMax))) : m_new * sl2;
      st.alpha = first ? 0.0f : numerics::exp2_f32((st.m - m_new) * sl2);
      st.l = st.l * st.alpha;
      const float ms = st.ms;
      exp2_rows(s, nullptr, sl2, -ms, n);
      break;
    }
    case ScoreForm::folded: {
      if (r.raw_max) {
        st.ms = std::fma(m_new, e[0], off);
        st.alpha = first ? 0.0f : numerics::exp2_f32((st.m - m_new) * e[0]);
      } else {
        st.ms = m_new;
        st.alpha = first ? 0.0f : numerics::exp2_f32(st.m - m_new);
      }
      const float ms = st.ms;
      exp2_rows(s, e, 0.0f, -ms, n);
      st.l = st.l * st.alpha;
      break;
    }
    case ScoreForm::prescaled: {
      st.ms = m_new;
      st.alpha = first ? 0.0f : numerics::exp2_f32(st.m - m_new);
      exp2_rows(s, nullptr, 1.0f, -m_new, n, /*fused=*/false);
      st.l = std::fma(st.l, st.alpha, row_sum(0.0f, s, n));
      st.m = m_new;
      return true;
    }
  }
  st.l = row_sum(st.l, s, n);
  st.m = m_new;
  return true;
}

// P of one row's block (quant_attention.cpp's quantize_p_row) into pb, and into pf the float
// P V operand: the dequantized value (for a cast, the element itself).
// y: scratch (n). A row holding a non-finite p goes through the reference.
void quantize_row(const Shared& f, const QuantContext& c, const QuantRowState& st, const float* p,
                  const float* raw, int n, QuantPBlock& pb, float* pf, float* y,
                  quant::Stats& stats) {
  const quant::RecipeSpec& r = f.r;
  int special = 0;
  for (int j = 0; j < n; ++j) special += !(std::fabs(p[j]) <= FLT_MAX);
  if (special == 0 && r.prob == ProbForm::mx_blocks) {
    for (int g0 = 0; g0 < n; g0 += kMxBlock) {
      float amax = 0.0f;
      for (int j = g0; j < std::min(n, g0 + kMxBlock); ++j) amax = std::max(amax, p[j]);
      const int e = nq::rceil_exponent(amax / 448.0f);
      pb.exps[sz(g0 / kMxBlock)] = e;
      // p / 2^e, exact in float for e <= 0 (no underflow; amax / 2^e <= 448 (1 + 2^-24)).
      special += e > 0;
    }
  }
  if (special != 0) {
    quantize_p_row(c, st, p, raw, n, pb, stats);
    for (int j = 0; j < n; ++j) pf[j] = f32(pb.deq[sz(j)]);
    return;
  }
  const numerics::FloatRounder round = f.p_round;
  double* elem = pb.elem.data();  // (n)
  double* deq = pb.deq.data();    // (n)
  switch (r.prob) {
    case ProbForm::cast:
      for (int j = 0; j < n; ++j) {
        y[j] = p[j];
        const float x = round(p[j]);
        elem[j] = x;
        deq[j] = x;
        pf[j] = x;
      }
      break;
    case ProbForm::mx_blocks:
      for (int g0 = 0; g0 < n; g0 += kMxBlock) {
        const int e = pb.exps[sz(g0 / kMxBlock)];
        const float inv = std::ldexp(1.0f, -e);
        const double scale = std::ldexp(1.0, e);
        for (int j = g0; j < std::min(n, g0 + kMxBlock); ++j) {
          y[j] = p[j] * inv;
          const float x = round(y[j]);
          elem[j] = x;
          deq[j] = x * scale;
          pf[j] = f32(deq[j]);
        }
      }
      break;
    case ProbForm::nvfp4_blocks:
      for (int g0 = 0; g0 < n; g0 += kNvBlock) {
        const int g1 = std::min(n, g0 + kNvBlock);
        float bm = kNegInf;
        for (int j = g0; j < g1; ++j) bm = std::max(bm, raw[j]);
        const float x = std::fma(bm, c.sl2, -st.ms) + f32(std::log2(1.0 / 6.0));
        const double scale = numerics::round_to(Format::fp8_e4m3, numerics::exp2_f32(x),
                                                numerics::Overflow::saturate);
        pb.scale[sz(g0 / kNvBlock)] = scale;
        ++stats.groups;
        stats.zero_scales += scale == 0.0;
        const float inv = scale != 0.0 ? 1.0f / f32(scale) : 0.0f;
        for (int j = g0; j < g1; ++j) {
          y[j] = p[j] * inv;
          const float v = round(y[j]);
          elem[j] = v;
          deq[j] = v * scale;
          pf[j] = f32(deq[j]);
        }
      }
      break;
  }
  // The statistics in key order, as the reference sums them.
  const Format fmt = r.p_format;
  const double top = numerics::traits(fmt).max_finite;
  for (int j = 0; j < n; ++j) {
    stats.saturated += y[j] > top && nq::saturates(fmt, y[j]);
    const double err = deq[j] - p[j];
    stats.err_sq += err * err;
    stats.ref_sq += static_cast<double>(p[j]) * p[j];
    stats.max_abs_err = std::max(stats.max_abs_err, std::fabs(err));
  }
  stats.elements += static_cast<std::size_t>(n);
}

// ---- P V -------------------------------------------------------------------------------------

#if defined(__AVX512F__)
// An fp16 accumulator's step on 16 lanes: fma, then round to nearest even fp16 and back by the
// F16C conversions (numerics::round_to_fp16's result for every non-NaN float: subnormals kept,
// inf beyond 65504; a NaN stays NaN, its payload aside).
constexpr int kF16Width = 16;
// The zero-masked forms (all lanes kept): GCC 12's unmasked ones start from an undefined
// register, which -Wmaybe-uninitialized reports (as tc_simd_kernels.hpp notes).
inline __m512 fp16_step(__m512 p, __m512 v, __m512 c) {
  const __m256i h = _mm512_maskz_cvtps_ph(0xFFFF, _mm512_fmadd_ps(p, v, c),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_maskz_cvtph_ps(0xFFFF, h);
}
// c(kVecs x 16 columns from c0) through the chain over keys [0, n), in registers.
template <int kVecs>
void pv_fp16_chunk(const float* p, int n, const float* v, int ld, float* c, int c0) {
  __m512 a[kVecs];
  for (int u = 0; u < kVecs; ++u) a[u] = _mm512_loadu_ps(c + u * kF16Width);
  for (int j = 0; j < n; ++j) {
    const __m512 pj = _mm512_set1_ps(p[j]);
    const float* vj = v + sz(j) * ld + c0;  // (kVecs x 16)
    for (int u = 0; u < kVecs; ++u) a[u] = fp16_step(pj, _mm512_loadu_ps(vj + u * kF16Width), a[u]);
  }
  for (int u = 0; u < kVecs; ++u) _mm512_storeu_ps(c + u * kF16Width, a[u]);
}
#endif

// C(r, t) <- the chain over row r's keys [0, act[r]) of P(r, j) V(j0 + j, t), from C, without a
// profile: fp32 FMAs in key order, each step rounded to fp16 where the accumulator is fp16.
void pv_float(const Shared& f, int bh, int j0, const float* pf, int ld_p, const int* act, int rows,
              float* cacc) {
  const int ld = f.pk.ld_v;
  const float* v = f.pk.v_head(bh) + sz(j0) * ld;  // (n, ld)
  if (!f.r.pv_fp16) {
    pv_block<float, true>(pf, ld_p, act, rows, v, ld, cacc);
    return;
  }
  for (int r = 0; r < rows; ++r) {
    float* cr = cacc + sz(r) * ld;        // (ld)
    const float* pr = pf + sz(r) * ld_p;  // (act[r])
#if defined(__AVX512F__)
    int c0 = 0;
    for (; c0 + 8 * kF16Width <= ld; c0 += 8 * kF16Width)
      pv_fp16_chunk<8>(pr, act[r], v, ld, cr + c0, c0);
    for (; c0 < ld; c0 += kF16Width) pv_fp16_chunk<1>(pr, act[r], v, ld, cr + c0, c0);
#else
    for (int j = 0; j < act[r]; ++j) {
      const float* vj = v + sz(j) * ld;  // (ld)
      for (int t = 0; t < ld; ++t) cr[t] = numerics::round_to_fp16(std::fma(pr[j], vj[t], cr[t]));
    }
#endif
  }
}

// The same through the profile's lanes (16 output columns per call).
void pv_lanes(const Shared& f, const QuantContext& c, int j0, const std::vector<QuantPBlock>& pbs,
              const int* act, int rows, float* cacc, int ld_c) {
  const quant::Quantized& vq = f.qp.v;
  const int d = c.d, n_max = *std::max_element(act, act + rows);
  if (n_max == 0) return;
  const int ldb = (d + kLanes - 1) / kLanes * kLanes;
  const bool mx = f.r.pv == OperandKind::mxfp8, nv = f.r.pv == OperandKind::nvfp4;
  const Format pv_format = f.r.pv == OperandKind::fp16 ? Format::fp16 : Format::fp8_e4m3;
  const double emin = numerics::traits(pv_format).min_exponent;
  std::vector<double> vb(sz(n_max) * ldb, 0.0), ve(vb.size(), tc_lanes::kZeroExponent);  // (n, ldb)
  std::vector<char> col_special(sz(ldb), 0);                                             // (ldb)
  bool block_special = false;
  std::vector<int> se(sz(d), 0);  // (d) mxfp8: V's scale exponents of the current 32 keys
  for (int j = 0; j < n_max; ++j) {
    if (mx && j % kMxBlock == 0)
      for (int t = 0; t < d; ++t) {
        const double scale = vq.scale(c.b, c.h, j0 + j, t);
        col_special[sz(t)] |= !std::isfinite(scale);
        se[sz(t)] = std::isfinite(scale) ? std::ilogb(scale) : 0;
      }
    block_special |= lane_operands(c.v8 + sz(j0 + j) * d, d, emin, mx ? se.data() : nullptr,
                                   vb.data() + sz(j) * ldb, ve.data() + sz(j) * ldb) != 0;
  }
  const bool in_float = f.pv_chain_f != nullptr;
  std::vector<float> vbf(in_float ? vb.size() : 0);  // (n, ldb) V as floats
  std::vector<std::int32_t> vef(vbf.size());         // (n, ldb) its exponents
  if (in_float)
    block_special |= !float_lane_operands(vb.data(), ve.data(), static_cast<int>(vb.size()),
                                          vbf.data(), vef.data());
  if (block_special) std::fill(col_special.begin(), col_special.end(), 1);
  const double* vs = nv ? &vq.scales[vq.group(c.b, c.h, j0, 0)] : nullptr;  // (n / 16, d)
  std::vector<double> pa(sz(n_max)), pe(sz(n_max));                         // (n) one P row
  std::vector<int> ps(sz(n_max));                                           // (n) its exponents
  std::vector<float> paf(in_float ? sz(n_max) : 0);                         // (n) as floats
  std::vector<std::int32_t> pef(paf.size());                                // (n)
  std::vector<double> row_d(in_float ? sz(ldb) : 0);  // (ldb) C, then D, from the float lanes
  for (int r = 0; r < rows; ++r) {
    const int n = act[r];
    if (n == 0) continue;
    const QuantPBlock& pb = pbs[sz(r)];
    if (mx)
      for (int j = 0; j < n; ++j) ps[sz(j)] = pb.exps[sz(j / kMxBlock)];
    bool row_special =
        lane_operands(pb.elem.data(), n, emin, mx ? ps.data() : nullptr, pa.data(), pe.data()) != 0;
    float* cr = cacc + sz(r) * ld_c;  // (d)
    if (in_float) {
      row_special |= !float_lane_operands(pa.data(), pe.data(), n, paf.data(), pef.data());
      for (int t = 0; t < ldb; ++t) row_d[sz(t)] = t < d ? static_cast<double>(cr[t]) : 0.0;
      f.pv_chain_f(paf.data(), pef.data(), vbf.data(), vef.data(), ldb, n, ldb / kLanes,
                   row_d.data());
      for (int t = 0; t < d; ++t) {
        const bool special = row_special || col_special[sz(t)] || !std::isfinite(row_d[sz(t)]);
        cr[t] = f32(special ? quant_pv_dot(c, pb, j0, n, t, cr[t]) : row_d[sz(t)]);
      }
      continue;
    }
    for (int c0 = 0; c0 < d; c0 += kLanes) {
      alignas(64) double lanes[kLanes] = {}, c_in[kLanes] = {};
      for (int l = 0; l < kLanes && c0 + l < d; ++l) lanes[l] = c_in[l] = cr[c0 + l];
      if (nv) {
        quant_lanes::nvf4_lanes(pb.elem.data(), vb.data() + c0, ldb, n, pb.scale.data(), vs + c0, d,
                                lanes);
      } else {
        f.pv_chain(pa.data(), pe.data(), vb.data() + c0, ve.data() + c0, ldb, n, lanes);
      }
      for (int l = 0; l < kLanes && c0 + l < d; ++l) {
        const int t = c0 + l;
        const bool special = row_special || col_special[sz(t)] || !std::isfinite(lanes[l]);
        cr[t] = f32(special ? quant_pv_dot(c, pb, j0, n, t, c_in[l]) : lanes[l]);
      }
    }
  }
}

// The block's P V joined to the rows' accumulators acc (rows, ld), by the recipe's PvForm
// (quant_attention.cpp's accumulate_pv); pv: scratch of acc's shape.
void accumulate(const Shared& f, const QuantContext& c, int j0,
                const std::vector<QuantRowState>& state, const std::vector<QuantPBlock>& pbs,
                const float* pf, int ld_p, const int* act, int rows, float* acc, float* pv) {
  const int d = c.d, ld = f.pk.ld_v > 0 ? f.pk.ld_v : (d + kLanes - 1) / kLanes * kLanes;
  const PvForm form = f.r.pv_form;
  float* target = acc;
  for (int r = 0; r < rows; ++r) {
    if (act[r] == 0) continue;
    float* ar = acc + sz(r) * ld;  // (d)
    const float alpha = state[sz(r)].alpha;
    if (form == PvForm::chain) {
      for (int t = 0; t < d; ++t) ar[t] = ar[t] * alpha;
    } else {
      std::fill(pv + sz(r) * ld, pv + sz(r + 1) * ld, 0.0f);
    }
  }
  if (form != PvForm::chain) target = pv;
  if (f.pv_lanes) {
    pv_lanes(f, c, j0, pbs, act, rows, target, ld);
  } else {
    pv_float(f, c.b * f.p.shape.heads + c.h, j0, pf, ld_p, act, rows, target);
  }
  if (form == PvForm::chain) return;
  std::vector<float> vs(form == PvForm::block_merge ? sz(d) : 0);  // (d) V's scales of the block
  for (int t = 0; t < static_cast<int>(vs.size()); ++t)
    vs[sz(t)] = f32(f.qp.v.scale(c.b, c.h, j0, t));
  for (int r = 0; r < rows; ++r) {
    if (act[r] == 0) continue;
    float* ar = acc + sz(r) * ld;       // (d)
    const float* pr = pv + sz(r) * ld;  // (d)
    const float alpha = state[sz(r)].alpha;
    if (form == PvForm::block_merge) {
      for (int t = 0; t < d; ++t) ar[t] = std::fma(pr[t], vs[sz(t)], ar[t] * alpha);
    } else if (f.r.fused_merge) {
      for (int t = 0; t < d; ++t) ar[t] = std::fma(ar[t], alpha, pr[t]);
    } else {
      for (int t = 0; t < d; ++t) ar[t] = ar[t] * alpha + pr[t];
    }
  }
}

// ---- One work item ---------------------------------------------------------------------------

void fast_rows(const Shared& f, const RowBlock& rb, Output& out, quant::Stats& stats) {
  const Problem& p = f.p;
  const QuantContext c = make_quant_context(f.qp, rb.b, rb.h);
  const int rows = rb.row_end - rb.row_begin, d = c.d, bc = p.block_c;
  const int ld_s = (bc + kLanes - 1) / kLanes * kLanes;
  const int ld = f.pk.ld_v > 0 ? f.pk.ld_v : (d + kLanes - 1) / kLanes * kLanes;
  std::vector<QuantRowState> state(sz(rows));
  std::vector<int> count(sz(rows)), act(sz(rows));
  std::vector<float> s(sz(rows) * ld_s), pf(s.size());  // (rows, ld_s): dots, then p; P as read
  std::vector<float> acc(sz(rows) * ld, 0.0f);          // (rows, ld) O
  std::vector<float> pv(f.r.pv_form == PvForm::chain ? 0 : acc.size());  // (rows, ld) block's P V
  std::vector<float> e(sz(ld_s)), raw(e.size()), z(e.size()), y(e.size());  // (ld_s) one row
  std::vector<QuantPBlock> pbs(sz(rows));
  for (QuantPBlock& pb : pbs) {
    pb.elem.resize(sz(bc));
    pb.deq.resize(sz(bc));
    pb.scale.resize(sz(bc / kNvBlock + 1));
    pb.exps.resize(sz(bc / kMxBlock + 1));
  }
  QLanes ql;
  if (f.qk_lanes) make_q_lanes(f, c, rb.row_begin, rows, ql);
  const int kv_end = visible_count(rb.row_end - 1, p.shape.seq_q, p.shape.seq_kv, p.causal);
  for (int j0 = 0; j0 < kv_end; j0 += bc) {
    for (int r = 0; r < rows; ++r)
      count[sz(r)] =
          rows::visible_in_block(rb.row_begin + r, j0, bc, p.shape.seq_q, p.shape.seq_kv, p.causal);
    if (*std::max_element(count.begin(), count.end()) == 0) continue;
    qk_tile(f, c, ql, rb.row_begin, rows, j0, count.data(), s.data(), ld_s);
    for (int r = 0; r < rows; ++r) {
      act[sz(r)] = 0;
      const int i = rb.row_begin + r, n = count[sz(r)];
      if (n == 0) continue;
      float* sr = s.data() + sz(r) * ld_s;  // (n)
      score_form(f, c, i, j0, n, sr, e.data());
      if (f.r.prob == ProbForm::nvfp4_blocks) std::copy(sr, sr + n, raw.begin());
      if (!softmax_row(f, c.sl2, state[sz(r)], sr, e.data(), z.data(), n)) continue;
      quantize_row(f, c, state[sz(r)], sr, raw.data(), n, pbs[sz(r)], pf.data() + sz(r) * ld_s,
                   y.data(), stats);
      act[sz(r)] = n;
    }
    accumulate(f, c, j0, state, pbs, pf.data(), ld_s, act.data(), rows, acc.data(), pv.data());
  }
  double* o = out.o.head_ptr(rb.b, rb.h) + sz(rb.row_begin) * d;  // (rows, d)
  double* lse = out.lse.data() + (sz(rb.b) * out.o.heads + rb.h) * out.o.rows + rb.row_begin;
  for (int r = 0; r < rows; ++r)
    finish_quant_row(c, state[sz(r)], acc.data() + sz(r) * ld, o + sz(r) * d, lse[r]);
}

}  // namespace

bool quant_fast_covers(const QuantProblem& qp) {
  const OperandKind k = qp.recipe->qk;
  if (!is_integer(k)) return true;
  const double qmax = k == OperandKind::int8 ? 127.0 : 7.0;
  return qp.p->shape.head_dim * qmax * qmax < 0x1p24;
}

void run_quant_fast(const QuantProblem& qp, Output& out, std::vector<quant::Stats>& p_stats) {
  const Problem& p = *qp.p;
  const quant::RecipeSpec& r = *qp.recipe;
  Shared f{qp, r, p};
  const mma::Arch arch = p.policy.mma;
  const bool tc = arch != mma::Arch::none;
  f.qk_lanes = tc && !is_integer(r.qk);
  f.pv_lanes = tc;
  if (!f.qk_lanes || !f.pv_lanes) {
    // Without a profile the block-scaled kinds multiply their dequantized values (fma_chain).
    const bool deq = !tc && is_block_scaled(r.qk);
    f.pk = deq ? pack_tensors<float>(p, qp.q.dequantized(), qp.k.dequantized(), qp.v.dequantized(),
                                     p.block_c)
               : pack_tensors<float>(p, qp.q.values, qp.k.values, qp.v.values, p.block_c);
  }
  if (r.score != ScoreForm::block_scaled) {
    const std::size_t heads = sz(p.shape.batch) * p.shape.heads;
    f.sq.resize(heads * p.shape.seq_q);
    f.sk.resize(heads * p.shape.seq_kv);
    for (int b = 0; b < p.shape.batch; ++b)
      for (int h = 0; h < p.shape.heads; ++h) {
        const std::size_t bh = sz(b) * p.shape.heads + h;
        for (int i = 0; i < p.shape.seq_q; ++i)
          f.sq[bh * p.shape.seq_q + i] = f32(qp.q.scale(b, h, i, 0));
        for (int j = 0; j < p.shape.seq_kv; ++j)
          f.sk[bh * p.shape.seq_kv + j] = f32(qp.k.scale(b, h, j, 0));
      }
  }
  if (tc) {
    const mma::Instruction ins = mma::default_instruction(arch);
    if (r.qk == OperandKind::mxfp8) {
      f.qk_chain = &tc_lanes::lane_chain<mma::Sm100MxF8>;
      f.qk_chain_f = &tc_lanes::lane_chain_f<mma::Sm100MxF8>;
    }
    if (r.qk == OperandKind::fp8 || r.qk == OperandKind::fp16) {
      const tc_lanes::Gemm g = tc_lanes::gemm_of(arch, Format::fp8_e4m3, Format::fp8_e4m3);
      f.qk_chain = g.chain;
      f.qk_chain_f = g.chain_f;
    }
    if (r.pv == OperandKind::mxfp8) {
      f.pv_chain = &tc_lanes::lane_chain<mma::Sm100MxF8>;
      f.pv_chain_f = &tc_lanes::lane_chain_f<mma::Sm100MxF8>;
    }
    if (r.pv == OperandKind::fp8 || r.pv == OperandKind::fp16) {
      const mma::Kind kind = r.pv == OperandKind::fp16 ? mma::Kind::f16 : mma::Kind::f8;
      mma::with_profile(arch, ins, kind, [&](auto profile) {
        using P = decltype(profile);
        f.pv_chain =
            r.pv_fp16 ? &tc_lanes::lane_chain<P, mma::Output::fp16> : &tc_lanes::lane_chain<P>;
        if (!r.pv_fp16) f.pv_chain_f = &tc_lanes::lane_chain_f<P>;
      });
    }
  }
  f.p_round = numerics::FloatRounder(r.p_format, numerics::Overflow::saturate);
  const std::size_t items = row_block_count(p.shape, p.block_r);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    fast_rows(f, row_block(p.shape, p.block_r, item), out, p_stats[item]);
  });
}

}  // namespace attndev::attention::detail
