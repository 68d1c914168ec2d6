// The one loop of the quantized recipes (quant_recipes.hpp) in its reference form: one row and
// one key at a time, each step a scalar function (fast_quant.cpp is the same loop over tiles,
// bit for bit). Per block of query rows of one
// (batch, head), K/V blocks of Bc keys in increasing order (masked keys never visited, as
// flash2). Each step in the form its recipe names; every value is an fp32 number computed by one
// IEEE float operation (fmaf where the kernel fuses), exp2 is numerics::exp2_f32 (the GPU's
// ex2.approx is not modelled: docs/numerics.md):
//
//   scores   s_j = the QK^T dot of the recipe's operands through the profile (mma none: an fp32
//            FMA chain over d; int8/int4: exact integers, converted to fp32), then by ScoreForm:
//              dequant       s = R(dot * R(s_q s_k))                       (flash3-fp8's rule)
//              folded        e = R(scale_log2 * R(s_q s_k)); z = fma(s, e, -offset); with
//                            Q smoothing's dS: s = R(R(s R(s_q s_k)) + dS), e = scale_log2
//              prescaled     s = R(R(dot) * R(s_q s_k))       (Q holds scale * log2 e already)
//              block_scaled  s = dot (+ dS)                      (the mma applied the scales)
//   softmax  running max m, row sum l (fp32, in key order, over the unquantized p):
//              dequant, block_scaled  FA-2: ms = R(m scale_log2), p = exp2(fma(s, sl2, -ms)),
//                                     alpha = exp2(R(R(m_old - m) sl2)); SageAttention3's ms =
//                                     fma(m, sl2, log2(1 / 2688)), so p lies in [0, 2688]
//              folded, raw_max        FA-3: ms = fma(m, e, -offset), p = exp2(fma(s, e, -ms)),
//                                     alpha = exp2(R(R(m_old - m) e))
//              folded                 SageAttention2: m = max z, p = exp2(fma(s, e, -m)),
//                                     alpha = exp2(R(m_old - m))
//              prescaled              SageAttention 1: p = exp2(R(s - m)), alpha = exp2(R(m_old -
//                                     m)), l = fma(l, alpha, sum of the block's p)
//   P        by ProbForm: cast (e4m3 saturating, fp16), mx_blocks (e8m0 round-up scale per 32
//            keys), nvfp4_blocks (ue4m3 scale per 16 keys from the block's max score, e2m1)
//   P V      by PvForm: chain (O = R(O alpha), then the mma with C = O), block_merge (the block's
//            mma from 0, O = fma(pv, s_v, R(O alpha))), two_level (from 0 in the P V
//            accumulator, O = R(R(O alpha) + pv) or fma(O, alpha, pv))
//   end      O = R(O * R(1/l)) (FA-3: R(O * R(R(1/l) s_v)); SageAttention2: R(R(O * R(1/l)) s_v);
//            SageAttention 1: R(O / l)), rounded to the policy's output format.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "attention/fp8_quant.hpp"
#include "attention/quant_attention.hpp"
#include "numerics/math.hpp"
#include "numerics/mma.hpp"
#include "numerics/quant.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::detail {

namespace {

using numerics::Format;
namespace mma = numerics::mma;
namespace nq = numerics::quant;
using quant::OperandKind;
using quant::ProbForm;
using quant::PvForm;
using quant::ScoreForm;

constexpr double kLn2 = 0.69314718055994530942;
constexpr float kNegInf = -INFINITY;
// SageAttention3's P scaling: P lies in [0, 448 * 6] and each 16-key block's scale in [0, 448].
constexpr double kSage3PMax = 448.0 * 6.0;
constexpr int kMxBlock = 32, kNvBlock = 16, kNvInstructionK = 64;
// kind::mxf4nvf4's fraction bits: each 16-product group is summed exactly and scaled, the four
// group sums and C aligned and truncated to 35 fraction bits (MMA-Sim, nv_ptx.py; attndev's
// reading of how a group sum's exponent is taken: floor(log2 |sum|)).
constexpr int kNvf4FracBits = 35;

// sum_j a[j sa] b[j sb] + c as an FMA chain in fp32 (or each step rounded to fp16: an fp16
// accumulator), in j order. The mma-less profile.
double fma_chain(const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb, int n,
                 double c, bool fp16) {
  float acc = f32(c);
  for (int j = 0; j < n; ++j) {
    acc = std::fma(f32(a[j * sa]), f32(b[j * sb]), acc);
    if (fp16) acc = f32(numerics::round_to(Format::fp16, static_cast<double>(acc)));
  }
  return acc;
}

}  // namespace

double quant_qk_dot(const QuantContext& c, int i, int j) {
  const int d = c.d;
  const double* qi = c.q8 + static_cast<std::ptrdiff_t>(i) * d;  // (d)
  const double* kj = c.k8 + static_cast<std::ptrdiff_t>(j) * d;  // (d)
  switch (c.r.qk) {
    case OperandKind::fp8:
    case OperandKind::fp16:
      if (!c.tc()) return fma_chain(qi, 1, kj, 1, d, 0.0, false);
      return c.f8(mma::operands(Format::fp8_e4m3, Format::fp8_e4m3), qi, 1, kj, 1, d, 0.0,
                  mma::Output::fp32);
    case OperandKind::int8:
    case OperandKind::int4: {
      double acc = 0.0;  // exact: |products| <= 127^2, d of them, far below 2^53
      for (int t = 0; t < d; ++t) acc += qi[t] * kj[t];
      return acc;
    }
    case OperandKind::mxfp8: {
      if (!c.tc()) {
        const double* a = c.qdeq.data() + static_cast<std::ptrdiff_t>(i) * d;
        const double* b = c.kdeq.data() + static_cast<std::ptrdiff_t>(j) * d;
        return fma_chain(a, 1, b, 1, d, 0.0, false);
      }
      int exps[16];
      for (int g = 0; g * kMxBlock < d; ++g) {
        const double sq = c.qp.q.scale(c.b, c.h, i, g * kMxBlock);
        const double sk = c.qp.k.scale(c.b, c.h, j, g * kMxBlock);
        if (!std::isfinite(sq) || !std::isfinite(sk)) return NAN;
        exps[g] = std::ilogb(sq) + std::ilogb(sk);
      }
      return mma::dot_block_scaled<mma::Sm100MxF8>(Format::fp8_e4m3, Format::fp8_e4m3, qi, 1, kj, 1,
                                                   d, exps, 0.0);
    }
    case OperandKind::nvfp4: {
      if (!c.tc()) {
        const double* a = c.qdeq.data() + static_cast<std::ptrdiff_t>(i) * d;
        const double* b = c.kdeq.data() + static_cast<std::ptrdiff_t>(j) * d;
        return fma_chain(a, 1, b, 1, d, 0.0, false);
      }
      const double* sq = &c.qp.q.scales[c.qp.q.group(c.b, c.h, i, 0)];  // (d / 16)
      const double* sk = &c.qp.k.scales[c.qp.k.group(c.b, c.h, j, 0)];  // (d / 16)
      return nvf4_dot(qi, 1, kj, 1, d, sq, sk, 1, 0.0);
    }
  }
  return NAN;
}

double quant_pv_dot(const QuantContext& c, const QuantPBlock& pb, int j0, int n, int t,
                    double acc) {
  const int d = c.d;
  const double* v = c.v8 + static_cast<std::ptrdiff_t>(j0) * d + t;  // (n) strided by d
  switch (c.r.pv) {
    case OperandKind::fp8:
    case OperandKind::fp16:
    case OperandKind::int8:
    case OperandKind::int4: {
      if (!c.tc()) return fma_chain(pb.elem.data(), 1, v, d, n, acc, c.r.pv_fp16);
      const mma::Output out = c.r.pv_fp16 ? mma::Output::fp16 : mma::Output::fp32;
      if (c.r.pv == OperandKind::fp16)
        return c.f16(mma::operands(Format::fp16, Format::fp16), pb.elem.data(), 1, v, d, n, acc,
                     out);
      return c.f8(mma::operands(Format::fp8_e4m3, Format::fp8_e4m3), pb.elem.data(), 1, v, d, n,
                  acc, out);
    }
    case OperandKind::mxfp8: {
      if (!c.tc()) {
        const double* vd = c.vdeq.data() + static_cast<std::ptrdiff_t>(j0) * d + t;
        return fma_chain(pb.deq.data(), 1, vd, d, n, acc, false);
      }
      int exps[64];
      for (int g = 0; g * kMxBlock < n; ++g) {
        const double sv = c.qp.v.scale(c.b, c.h, j0 + g * kMxBlock, t);
        if (!std::isfinite(sv)) return NAN;
        exps[g] = pb.exps[g] + std::ilogb(sv);
      }
      return mma::dot_block_scaled<mma::Sm100MxF8>(Format::fp8_e4m3, Format::fp8_e4m3,
                                                   pb.elem.data(), 1, v, d, n, exps, acc);
    }
    case OperandKind::nvfp4: {
      if (!c.tc()) {
        const double* vd = c.vdeq.data() + static_cast<std::ptrdiff_t>(j0) * d + t;
        return fma_chain(pb.deq.data(), 1, vd, d, n, acc, false);
      }
      // V's scales of column t, one per 16 tokens: groups (block, t) are d apart.
      const double* sv = &c.qp.v.scales[c.qp.v.group(c.b, c.h, j0, t)];
      return nvf4_dot(pb.elem.data(), 1, v, d, n, pb.scale.data(), sv, d, acc);
    }
  }
  return NAN;
}

namespace {

// Scores of row i against keys j0.. (n), as the softmax reads them; e[j]: folded's scale.
void scores(const QuantContext& c, int i, int j0, int n, float* s, float* e) {
  const quant::RecipeSpec& r = c.r;
  for (int j = 0; j < n; ++j) {
    const double dot = quant_qk_dot(c, i, j0 + j);
    const double ds = c.qp.delta_s(c.b, c.h, i, j0 + j);
    switch (r.score) {
      case ScoreForm::dequant: {
        const float descale =
            f32(c.qp.q.scale(c.b, c.h, i, 0)) * f32(c.qp.k.scale(c.b, c.h, j0 + j, 0));
        s[j] = f32(dot) * descale;
        break;
      }
      case ScoreForm::folded: {
        // int32 -> fp32 toward zero (__int2float_rz): exact here, |dot| < 2^24 for d <= 128.
        const float sf = f32(dot);
        const float qk = f32(c.qp.q.scale(c.b, c.h, i, 0)) * f32(c.qp.k.scale(c.b, c.h, j0 + j, 0));
        if (ds == 0.0) {
          e[j] = c.sl2 * qk;
          s[j] = sf;
        } else {
          // Q smoothing's dS is in the scores' own units: SageAttention2 (Algorithm 1) adds it
          // to the dequantized QK^T, and the softmax scale applies to the sum. Added to the
          // integer dot it would be multiplied by s_q s_k as well.
          e[j] = c.sl2;
          s[j] = sf * qk + f32(ds);
        }
        break;
      }
      case ScoreForm::prescaled: {
        const float qk = f32(c.qp.q.scale(c.b, c.h, i, 0)) * f32(c.qp.k.scale(c.b, c.h, j0 + j, 0));
        s[j] = f32(dot) * qk;
        break;
      }
      case ScoreForm::block_scaled:
        s[j] = ds == 0.0 ? f32(dot) : f32(dot) + f32(ds);
        break;
    }
  }
}

// The softmax step of one row and block: m, alpha, l, and p (in place of s). False, changing
// nothing, while every score so far is -inf.
bool softmax_step(const QuantContext& c, QuantRowState& st, float* s, const float* e, int n) {
  const quant::RecipeSpec& r = c.r;
  const bool z_max = r.score == ScoreForm::folded && !r.raw_max;
  float bm = kNegInf;
  for (int j = 0; j < n; ++j) {
    const float v = z_max ? std::fma(s[j], e[j], f32(-r.offset)) : s[j];
    bm = bm < v ? v : bm;
  }
  const float m_new = st.m < bm ? bm : st.m;
  if (m_new == kNegInf) return false;
  const bool first = st.m == kNegInf;
  switch (r.score) {
    case ScoreForm::dequant:
    case ScoreForm::block_scaled: {
      const bool sage3 = r.prob == ProbForm::nvfp4_blocks;
      st.ms = sage3 ? std::fma(m_new, c.sl2, f32(-std::log2(kSage3PMax))) : m_new * c.sl2;
      st.alpha = first ? 0.0f : numerics::exp2_f32((st.m - m_new) * c.sl2);
      st.l = st.l * st.alpha;
      for (int j = 0; j < n; ++j) s[j] = numerics::exp2_f32(std::fma(s[j], c.sl2, -st.ms));
      break;
    }
    case ScoreForm::folded:
      if (r.raw_max) {
        st.ms = std::fma(m_new, e[0], f32(-r.offset));
        st.alpha = first ? 0.0f : numerics::exp2_f32((st.m - m_new) * e[0]);
        for (int j = 0; j < n; ++j) s[j] = numerics::exp2_f32(std::fma(s[j], e[j], -st.ms));
      } else {
        st.ms = m_new;
        st.alpha = first ? 0.0f : numerics::exp2_f32(st.m - m_new);
        for (int j = 0; j < n; ++j) s[j] = numerics::exp2_f32(std::fma(s[j], e[j], -m_new));
      }
      st.l = st.l * st.alpha;
      break;
    case ScoreForm::prescaled: {
      st.ms = m_new;
      st.alpha = first ? 0.0f : numerics::exp2_f32(st.m - m_new);
      float block_sum = 0.0f;
      for (int j = 0; j < n; ++j) {
        s[j] = numerics::exp2_f32(s[j] - m_new);
        block_sum += s[j];
      }
      st.l = std::fma(st.l, st.alpha, block_sum);
      st.m = m_new;
      return true;
    }
  }
  for (int j = 0; j < n; ++j) st.l += s[j];
  st.m = m_new;
  return true;
}

// Joins the block's P V to the row's accumulator, by PvForm.
void accumulate_pv(const QuantContext& c, const QuantRowState& st, const QuantPBlock& pb, int j0,
                   int n, float* acc) {
  const quant::RecipeSpec& r = c.r;
  for (int t = 0; t < c.d; ++t) {
    switch (r.pv_form) {
      case PvForm::chain:
        acc[t] = f32(quant_pv_dot(c, pb, j0, n, t, acc[t] * st.alpha));
        break;
      case PvForm::block_merge: {
        const float pv = f32(quant_pv_dot(c, pb, j0, n, t, 0.0));
        acc[t] = std::fma(pv, f32(c.qp.v.scale(c.b, c.h, j0, t)), acc[t] * st.alpha);
        break;
      }
      case PvForm::two_level: {
        const float pv = f32(quant_pv_dot(c, pb, j0, n, t, 0.0));
        acc[t] = r.fused_merge ? std::fma(acc[t], st.alpha, pv) : acc[t] * st.alpha + pv;
        break;
      }
    }
  }
}

// Dequantized (b, h) matrices for the block-scaled kinds run without a tensor-core profile.
void dequantize_head(QuantContext& c) {
  const bool block_scaled = c.r.qk == OperandKind::mxfp8 || c.r.qk == OperandKind::nvfp4;
  if (!block_scaled || c.tc()) return;
  auto head = [&](const quant::Quantized& x, std::vector<double>& out) {
    out.resize(static_cast<std::size_t>(x.values.rows) * x.values.cols);
    for (int r = 0; r < x.values.rows; ++r)
      for (int t = 0; t < x.values.cols; ++t)
        out[static_cast<std::size_t>(r) * x.values.cols + t] = x.dequantized(c.b, c.h, r, t);
  };
  head(c.qp.q, c.qdeq);
  head(c.qp.k, c.kdeq);
  head(c.qp.v, c.vdeq);
}

void run_rows(const QuantProblem& qp, const RowBlock& rb, Output& out, quant::Stats& p_stats) {
  const Problem& p = *qp.p;
  QuantContext c = make_quant_context(qp, rb.b, rb.h);
  dequantize_head(c);
  const int rows = rb.row_end - rb.row_begin, d = c.d, bc = p.block_c;
  std::vector<QuantRowState> state(static_cast<std::size_t>(rows));
  std::vector<float> acc(static_cast<std::size_t>(rows) * d, 0.0f);                // (rows, d)
  std::vector<float> s(static_cast<std::size_t>(bc)), raw(s.size()), e(s.size());  // (Bc)
  QuantPBlock pb;
  pb.elem.resize(static_cast<std::size_t>(bc));
  pb.deq.resize(pb.elem.size());
  pb.scale.resize(static_cast<std::size_t>(bc / kNvBlock + 1));
  pb.exps.resize(static_cast<std::size_t>(bc / kMxBlock + 1));
  const int kv_end = visible_count(rb.row_end - 1, p.shape.seq_q, p.shape.seq_kv, p.causal);
  for (int j0 = 0; j0 < kv_end; j0 += bc) {
    for (int r = 0; r < rows; ++r) {
      const int i = rb.row_begin + r;
      const int n = rows::visible_in_block(i, j0, bc, p.shape.seq_q, p.shape.seq_kv, p.causal);
      if (n == 0) continue;
      scores(c, i, j0, n, s.data(), e.data());
      std::copy(s.begin(), s.begin() + n, raw.begin());
      if (!softmax_step(c, state[r], s.data(), e.data(), n)) continue;
      quantize_p_row(c, state[r], s.data(), raw.data(), n, pb, p_stats);
      accumulate_pv(c, state[r], pb, j0, n, acc.data() + static_cast<std::size_t>(r) * d);
    }
  }
  double* o = out.o.head_ptr(rb.b, rb.h) + static_cast<std::size_t>(rb.row_begin) * d;
  double* lse = out.lse.data() +
                (static_cast<std::size_t>(rb.b) * out.o.heads + rb.h) * out.o.rows + rb.row_begin;
  for (int r = 0; r < rows; ++r)
    finish_quant_row(c, state[r], acc.data() + static_cast<std::size_t>(r) * d,
                     o + static_cast<std::size_t>(r) * d, lse[r]);
}

}  // namespace

double nvf4_dot(const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb, int k,
                const double* scale_a, const double* scale_b, std::ptrdiff_t ss_b, double c) {
  for (int k0 = 0; k0 < k; k0 += kNvInstructionK) {
    double terms[kNvInstructionK / kNvBlock] = {};
    int count = 0;
    for (int g0 = k0; g0 < std::min(k, k0 + kNvInstructionK); g0 += kNvBlock, ++count) {
      double sum = 0.0;  // e2m1 products: exact, and so is their sum
      for (int j = g0; j < std::min(k, g0 + kNvBlock); ++j) sum += a[j * sa] * b[j * sb];
      terms[count] = sum * scale_a[g0 / kNvBlock] * scale_b[(g0 / kNvBlock) * ss_b];
    }
    int e_max = -133;
    for (int i = 0; i < count; ++i)
      if (terms[i] != 0 && std::isfinite(terms[i])) e_max = std::max(e_max, std::ilogb(terms[i]));
    if (c != 0 && std::isfinite(c)) e_max = std::max(e_max, std::ilogb(c));
    const double up = std::ldexp(1.0, kNvf4FracBits - e_max);
    double sum = std::trunc(c * up);
    for (int i = 0; i < count; ++i) sum += std::trunc(terms[i] * up);
    if (!std::isfinite(sum)) {
      c = sum;
      continue;
    }
    c = sum == 0 ? 0.0
                 : mma::round_d(std::ldexp(sum, e_max - kNvf4FracBits), false, mma::Output::fp32);
  }
  return c;
}

void quantize_p_row(const QuantContext& c, const QuantRowState& st, const float* p,
                    const float* raw, int n, QuantPBlock& pb, quant::Stats& stats) {
  const quant::RecipeSpec& r = c.r;
  const Format f = r.p_format;
  const int group = r.prob == ProbForm::cast        ? n
                    : r.prob == ProbForm::mx_blocks ? kMxBlock
                                                    : kNvBlock;
  for (int g0 = 0; g0 < n; g0 += group) {
    const int g1 = std::min(n, g0 + group);
    double scale = 1.0;
    if (r.prob == ProbForm::mx_blocks) {
      float amax = 0.0f;
      for (int j = g0; j < g1; ++j) amax = std::max(amax, p[j]);
      const int e = nq::rceil_exponent(amax / 448.0f);
      pb.exps[g0 / kMxBlock] = e;
      scale = std::ldexp(1.0, e);
    } else if (r.prob == ProbForm::nvfp4_blocks) {
      float bm = kNegInf;
      for (int j = g0; j < g1; ++j) bm = std::max(bm, raw[j]);
      const float x = std::fma(bm, c.sl2, -st.ms) + f32(std::log2(1.0 / 6.0));
      scale =
          numerics::round_to(Format::fp8_e4m3, numerics::exp2_f32(x), numerics::Overflow::saturate);
      pb.scale[g0 / kNvBlock] = scale;
      ++stats.groups;
      stats.zero_scales += scale == 0.0;
    }
    const float inv = r.prob == ProbForm::nvfp4_blocks && scale != 0.0 ? 1.0f / f32(scale) : 0.0f;
    for (int j = g0; j < g1; ++j) {
      double y = p[j];
      if (r.prob == ProbForm::mx_blocks) y = p[j] / scale;
      if (r.prob == ProbForm::nvfp4_blocks) y = p[j] * inv;
      stats.saturated += nq::saturates(f, y);
      pb.elem[j] = nq::round_element(f, y, nq::ElemRounding::nearest_even);
      pb.deq[j] = pb.elem[j] * scale;
      const double err = pb.deq[j] - p[j];
      stats.err_sq += err * err;
      stats.ref_sq += static_cast<double>(p[j]) * p[j];
      stats.max_abs_err = std::max(stats.max_abs_err, std::fabs(err));
    }
  }
  stats.elements += static_cast<std::size_t>(n);
}

void finish_quant_row(const QuantContext& c, const QuantRowState& st, const float* acc, double* o,
                      double& lse) {
  const quant::RecipeSpec& r = c.r;
  const Format out = c.qp.p->policy.output;
  if (st.l == 0.0f) {
    for (int t = 0; t < c.d; ++t) o[t] = 0.0;
    lse = -INFINITY;
    return;
  }
  const float inv_l = 1.0f / st.l;
  for (int t = 0; t < c.d; ++t) {
    float v;
    if (r.score == ScoreForm::prescaled) {
      v = acc[t] / st.l;
    } else if (r.v_scale_at_end && r.raw_max) {
      v = acc[t] * (inv_l * f32(c.qp.v.scale(c.b, c.h, 0, t)));
    } else if (r.v_scale_at_end) {
      v = (acc[t] * inv_l) * f32(c.qp.v.scale(c.b, c.h, 0, t));
    } else {
      v = acc[t] * inv_l;
    }
    o[t] = numerics::round_to(out, static_cast<double>(v));
  }
  if (r.score == ScoreForm::dequant)
    lse = static_cast<double>(st.m) * c.qp.p->scale + std::log(static_cast<double>(st.l));
  else
    lse = static_cast<double>(st.ms) * kLn2 + std::log(static_cast<double>(st.l));
}

QuantContext make_quant_context(const QuantProblem& qp, int b, int h) {
  const Problem& p = *qp.p;
  QuantContext c{qp, *qp.recipe, b, h, p.shape.head_dim, p.policy.mma};
  const mma::Instruction ins = mma::default_instruction(c.arch);
  if (c.tc()) {
    c.f8 = mma::dot_function(c.arch, ins, mma::Kind::f8);
    c.f16 = mma::dot_function(c.arch, ins, mma::Kind::f16);
  }
  c.sl2 = c.r.float_log2e ? f32(p.scale) * f32(numerics::kLog2e) : f32(qp.scale_log2);
  c.q8 = qp.q.values.head_ptr(b, h);
  c.k8 = qp.k.values.head_ptr(b, h);
  c.v8 = qp.v.values.head_ptr(b, h);
  return c;
}

void run_quant(Algorithm algorithm, const Problem& p, const Options::Fp8& options,
               Options::Path path, Output& out) {
  const std::string why =
      quant::recipe_unsupported(algorithm, p.policy.mma, p.shape, p.block_r, p.block_c);
  if (!why.empty()) throw std::invalid_argument(why);
  const QuantProblem qp = prepare_quant(algorithm, p, options, out);
  const std::size_t items = row_block_count(p.shape, p.block_r);
  // One Stats per work item, added in item order: the report does not depend on the threads.
  std::vector<quant::Stats> p_stats(items);
  if (path != Options::Path::generic && quant_fast_covers(qp)) {
    run_quant_fast(qp, out, p_stats);
  } else {
    parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
      run_rows(qp, row_block(p.shape, p.block_r, item), out, p_stats[item]);
    });
  }
  quant::Stats total;
  for (const quant::Stats& s : p_stats) total.add(s);
  out.quant.push_back(stage_report("p", total));
}

}  // namespace attndev::attention::detail
