// The quantized recipes' loop in its fast form: quant_attention.cpp's reference loop over whole
// tiles (a block of Br query rows against a block of Bc keys) instead of one row and one key at
// a time. Every element sees the same operations in the same order, so the two forms are
// bit-identical (test_fast_quant.cpp runs both on every recipe, profile and random shapes):
//   * QK^T without a tensor-core profile (or with integer operands, whose sums are exact): the
//     fast path's float tile (kernels.hpp qk_block: one lane per key, each an FMA chain over d
//     in order, as the reference's fma_chain). INT8/INT4 products summed in float are exact
//     while d * 127^2 < 2^24 (quant_fast_covers), so the float chain equals the exact int32 sum.
//   * QK^T and P V on a profile: quant_lane_gemms.hpp, the model's dot-adds in lanes of keys
//     (or output columns), several rows per call (tc_float_lanes.hpp, fp32 or fp16 D, whose
//     lanes skip to the scalar functions where an operand is not an exact float; quant_lanes.hpp
//     for kind::mxf4nvf4), on operands converted once per head (quant_operands.hpp).
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
// lane whose D is not finite, every lane of an operand holding inf or NaN (the lanes do not
// reproduce 0 x inf), a block-scaled lane whose scale is not finite, and a row of P holding a
// non-finite value (quantize_p_row).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attention/kernels.hpp"
#include "attention/quant_attention.hpp"
#include "attention/parallel.hpp"
#include "attention/quant_lane_gemms.hpp"
#include "attention/quant_operands.hpp"
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
using quant_lane_gemms::QLanes;
using quant_operands::HeadOperands;
using quant_operands::KeyTiles;
using quant_operands::ValueRows;

constexpr float kNegInf = -INFINITY;
using quant_operands::kMxBlock;
using quant_operands::kNvBlock;
constexpr int kLanes = tc_lanes::kLanes;
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
  quant_lane_gemms::LaneGemms g = {};   // the profile's lanes (qk_lanes, pv_lanes)
  numerics::FloatRounder p_round = {};  // P's element format, saturating
};

// ---- QK^T ------------------------------------------------------------------------------------

// The dots of one tile, as the reference's f32(dot).
void qk_tile(const Shared& f, const QuantContext& c, const QLanes& ql, const KeyTiles& kt, int i0,
             int rows, int j0, const int* n, float* s, int ld_s) {
  if (f.qk_lanes) {
    quant_lane_gemms::qk_lanes(f.g, c, ql, kt, i0, rows, j0, n, s, ld_s);
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

// The block's P V joined to the rows' accumulators acc (rows, ld), by the recipe's PvForm
// (quant_attention.cpp's accumulate_pv); pv: scratch of acc's shape.
void accumulate(const Shared& f, const QuantContext& c, const ValueRows& vr, int j0,
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
    quant_lane_gemms::pv_lanes(f.g, c, vr, j0, pbs, act, rows, target, ld);
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

void fast_rows(const Shared& f, const HeadOperands& ho, const RowBlock& rb, Output& out,
               quant::Stats& stats) {
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
  if (f.qk_lanes) quant_lane_gemms::make_q_lanes(c, rb.row_begin, rows, ql);
  const int kv_end = visible_count(rb.row_end - 1, p.shape.seq_q, p.shape.seq_kv, p.causal);
  for (int j0 = 0; j0 < kv_end; j0 += bc) {
    for (int r = 0; r < rows; ++r)
      count[sz(r)] =
          rows::visible_in_block(rb.row_begin + r, j0, bc, p.shape.seq_q, p.shape.seq_kv, p.causal);
    if (*std::max_element(count.begin(), count.end()) == 0) continue;
    qk_tile(f, c, ql, ho.k, rb.row_begin, rows, j0, count.data(), s.data(), ld_s);
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
    accumulate(f, c, ho.v, j0, state, pbs, pf.data(), ld_s, act.data(), rows, acc.data(),
               pv.data());
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
  const std::size_t heads = sz(p.shape.batch) * p.shape.heads;
  if (r.score != ScoreForm::block_scaled) {
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
  if (tc) f.g = quant_lane_gemms::make_lane_gemms(r, arch, p.block_c);
  f.p_round = numerics::FloatRounder(r.p_format, numerics::Overflow::saturate);
  // Heads in chunks of as many as there are threads: each chunk's K and V converted once
  // (quant_operands.hpp), then its row blocks (items are head-major: row_block).
  const std::size_t blocks = row_block_count(p.shape, p.block_r) / heads;
  const std::size_t chunk = sz(thread_count(p.threads));
  std::vector<HeadOperands> ops(chunk);  // (chunk)
  for (std::size_t h0 = 0; h0 < heads; h0 += chunk) {
    const std::size_t n = std::min(chunk, heads - h0);
    parallel_for(n, p.threads, p.schedule_seed, [&](std::size_t i) {
      const std::size_t bh = h0 + i;
      const QuantContext c = make_quant_context(qp, static_cast<int>(bh / sz(p.shape.heads)),
                                                static_cast<int>(bh % sz(p.shape.heads)));
      ops[i] = quant_operands::make_head_operands(c, p.block_c, f.qk_lanes, f.pv_lanes);
    });
    parallel_for(n * blocks, p.threads, p.schedule_seed, [&](std::size_t local) {
      const std::size_t item = h0 * blocks + local;
      fast_rows(f, ops[local / blocks], row_block(p.shape, p.block_r, item), out, p_stats[item]);
    });
  }
}

}  // namespace attndev::attention::detail
