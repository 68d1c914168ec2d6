// The transforms and quantization of a recipe's Q, K, V (quant_attention.hpp's prepare_quant):
//   hadamard        Q, K <- R_input((x D) H / sqrt(d)), as flash3-fp8 (fp8_quant.hpp)
//   q_prescaled     Q <- R32(Q * R32(scale * 1.44269504)): SageAttention 1 folds the softmax scale
//                   and log2 e into Q before quantizing (triton/quant_per_block.py: x *= sm_scale)
//   smooth_k        K <- K - km, km = the mean over tokens rounded to the input format (torch's
//                   k.mean in fp16/bf16); the difference rounded to the input format
//                   (smooth_k_stored: torch's k - km) or kept in fp32 (inside a fused quantizer)
//   smooth_q        Q <- R32(Q - qm), qm = the mean of each 128-token block in fp32; dS(block, j)
//                   = qm . K_j (the smoothed, unquantized K) in fp32, added back to the scores
// then Q, K, V quantized by the recipe's Specs (quantize.hpp).
#include <cmath>
#include <stdexcept>

#include "attention/fp8_quant.hpp"
#include "attention/quant_attention.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::detail {

namespace {

using numerics::Format;

// SageAttention2 / 3 smooth Q over blocks of 128 tokens (BLKQ).
constexpr int kSmoothQBlock = 128;
// SageAttention 1 multiplies sm_scale by this constant in Python before the fp32 quantizer.
constexpr double kSageLog2e = 1.44269504;

void subtract_token_mean(Tensor& k, Format input, bool stored) {
  for (int b = 0; b < k.batch; ++b)
    for (int h = 0; h < k.heads; ++h)
      for (int c = 0; c < k.cols; ++c) {
        double sum = 0.0;
        for (int r = 0; r < k.rows; ++r) sum += k.at(b, h, r, c);
        const double mean = numerics::round_to(input, sum / k.rows);
        for (int r = 0; r < k.rows; ++r) {
          const float diff = f32(k.at(b, h, r, c)) - f32(mean);
          k.at(b, h, r, c) = stored ? numerics::round_to(input, diff) : diff;
        }
      }
}

// Q <- Q - its block mean (fp32); returns the block means (B, H, blocks, d).
std::vector<double> subtract_block_mean(Tensor& q, int& blocks) {
  blocks = (q.rows + kSmoothQBlock - 1) / kSmoothQBlock;
  std::vector<double> means(static_cast<std::size_t>(q.batch) * q.heads * blocks * q.cols);
  std::size_t at = 0;
  for (int b = 0; b < q.batch; ++b)
    for (int h = 0; h < q.heads; ++h)
      for (int blk = 0; blk < blocks; ++blk) {
        const int r0 = blk * kSmoothQBlock, r1 = std::min(q.rows, r0 + kSmoothQBlock);
        for (int c = 0; c < q.cols; ++c, ++at) {
          float sum = 0.0f;
          for (int r = r0; r < r1; ++r) sum += f32(q.at(b, h, r, c));
          const float mean = sum / static_cast<float>(r1 - r0);
          means[at] = mean;
          for (int r = r0; r < r1; ++r) q.at(b, h, r, c) = f32(q.at(b, h, r, c)) - mean;
        }
      }
  return means;
}

// dS(b, h, blk, j) = sum_c qm(b, h, blk, c) k(b, h, j, c), an fp32 FMA chain in c order.
std::vector<double> smoothing_correction(const std::vector<double>& qm, int blocks,
                                         const Tensor& k) {
  std::vector<double> ds(static_cast<std::size_t>(k.batch) * k.heads * blocks * k.rows);
  std::size_t at = 0;
  for (int b = 0; b < k.batch; ++b)
    for (int h = 0; h < k.heads; ++h)
      for (int blk = 0; blk < blocks; ++blk) {
        const double* m = qm.data() + ((static_cast<std::size_t>(b) * k.heads + h) * blocks + blk) *
                                          static_cast<std::size_t>(k.cols);  // (d)
        for (int j = 0; j < k.rows; ++j, ++at) {
          float acc = 0.0f;
          for (int c = 0; c < k.cols; ++c) acc = std::fma(f32(m[c]), f32(k.at(b, h, j, c)), acc);
          ds[at] = acc;
        }
      }
  return ds;
}

// V as a recipe that does not quantize it reads it: rounded to fp16 (SageAttention converts V to
// fp16), scale 1.
quant::Quantized unquantized(const Tensor& v, Format f) {
  quant::Quantized out;
  out.spec.element = f;
  out.spec.granularity = quant::Granularity::per_tensor;
  out.values = v;
  for (double& x : out.values.data) x = numerics::round_to(f, x);
  out.scales = {1.0};
  return out;
}

}  // namespace

double QuantProblem::delta_s(int b, int h, int row, int key) const {
  if (ds.empty()) return 0.0;
  const std::size_t bh = static_cast<std::size_t>(b) * p->shape.heads + h;
  return ds[(bh * ds_blocks + row / kSmoothQBlock) * p->shape.seq_kv + key];
}

const double* QuantProblem::delta_s_row(int b, int h, int row) const {
  const std::size_t bh = static_cast<std::size_t>(b) * p->shape.heads + h;
  return ds.data() + (bh * ds_blocks + row / kSmoothQBlock) * p->shape.seq_kv;
}

QuantStageReport stage_report(const char* stage, const quant::Stats& s) {
  QuantStageReport r;
  r.stage = stage;
  r.elements = s.elements;
  r.saturated = s.saturated;
  r.groups = s.groups;
  r.zero_scales = s.zero_scales;
  r.nonfinite_scales = s.nonfinite_scales;
  r.rel_rmse = s.err_sq != s.err_sq ? s.err_sq : s.rel_rmse();
  return r;
}

QuantProblem prepare_quant(Algorithm algorithm, const Problem& p, const Options::Fp8& options,
                           Output& out) {
  const quant::RecipeSpec* r = quant::find_recipe(algorithm);
  if (!r) throw std::invalid_argument(std::string(algorithm_name(algorithm)) + " has no recipe");
  if (p.scale_in_query)
    throw std::invalid_argument(std::string(algorithm_name(algorithm)) +
                                " applies the softmax scale where its kernel does: use "
                                "scale_placement \"scores\"");
  QuantProblem qp;
  qp.p = &p;
  qp.recipe = r;
  qp.scale_log2 = p.scale_log2();
  Tensor q = p.q;  // (B, H, N_q, d)
  Tensor k = p.k;  // (B, H, N_kv, d)
  if (r->hadamard) {
    const std::vector<double> signs = fp8::random_signs(p.shape.head_dim, options.hadamard_seed);
    fp8::rotate_rows(q, signs, p.policy.score_accum, p.policy.input);
    fp8::rotate_rows(k, signs, p.policy.score_accum, p.policy.input);
  }
  if (r->q_prescaled) {
    const float c = f32(p.scale * kSageLog2e);
    for (double& x : q.data) x = f32(x) * c;
  }
  if (r->smooth_k) subtract_token_mean(k, p.policy.input, r->smooth_k_stored);
  if (r->smooth_q) {
    const std::vector<double> means = subtract_block_mean(q, qp.ds_blocks);
    qp.ds = smoothing_correction(means, qp.ds_blocks, k);
  }
  quant::Spec qs = r->q, ks = r->k, vs = r->v;
  if (r->q_block_is_br) qs.rows = p.block_r;
  if (r->kv_block_is_bc) ks.rows = vs.rows = p.block_c;
  qp.q = quant::quantize(q, qs);
  qp.k = quant::quantize(k, ks);
  qp.v = vs.element == Format::fp16 ? unquantized(p.v, Format::fp16) : quant::quantize(p.v, vs);
  out.quant.push_back(stage_report("q", qp.q.stats));
  out.quant.push_back(stage_report("k", qp.k.stats));
  if (vs.element != Format::fp16) out.quant.push_back(stage_report("v", qp.v.stats));
  return qp;
}

}  // namespace attndev::attention::detail
