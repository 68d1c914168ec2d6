// Internals of the quantized recipes (quant_recipes.hpp): the prepared problem (transformed and
// quantized Q, K, V with the smoothing correction dS), the one loop every recipe runs in its
// reference form (quant_attention.cpp: one row and one key at a time, each step a scalar
// function) and in its fast form (fast_quant.cpp: the same operations in the same order per
// element, over whole tiles, vectorized). The two are bit-identical by contract
// (test_fast_quant.cpp); Options::Path::generic selects the reference form. Not public API.
#pragma once

#include <cmath>
#include <vector>

#include "attention/detail.hpp"
#include "attention/quant_recipes.hpp"
#include "attention/quantize.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::detail {

// A double holding an fp32 value (or to be rounded to one) as float: one IEEE conversion, exact
// for fp32 values. Shared by the recipes' units (one definition, also in a unity batch).
inline float f32(double x) {
  return static_cast<float>(x);
}

struct QuantProblem {
  const Problem* p = nullptr;
  const quant::RecipeSpec* recipe = nullptr;
  quant::Quantized q, k, v;  // v: element fp16 = not quantized (values R16(V), scales 1)
  // smooth_q: dS(b, h, q block, j) = mean of the 128-token Q block . K_j (smoothed K), fp32;
  // added to every score of the block's rows. (B, H, ceil(N_q / 128), N_kv); empty otherwise.
  std::vector<double> ds;
  int ds_blocks = 0;
  // R_fp32(scale * log2 e) as the recipe's kernel computes it.
  double scale_log2 = 1.0;

  double delta_s(int b, int h, int row, int key) const;
  const double* delta_s_row(int b, int h, int row) const;  // (N_kv); ds non-empty
};

// Transforms and quantizes p's Q, K, V by the recipe's rules (quantize.hpp), filling the q, k, v
// stage reports of out.quant. Throws std::invalid_argument for a shape the recipe cannot tile.
QuantProblem prepare_quant(Algorithm algorithm, const Problem& p, const Options::Fp8& options,
                           Output& out);

// Runs a quantized recipe: prepare_quant, then the rows over row blocks on p.threads threads, in
// the fast form unless path is generic (or the fast form does not cover the shape:
// quant_fast_covers); appends the p stage's report.
void run_quant(Algorithm algorithm, const Problem& p, const Options::Fp8& options,
               Options::Path path, Output& out);

// ---- The reference form's steps, shared with the fast form ---------------------------------

// The per-(b, h) constants of the loop and the GEMM choices of the profile.
struct QuantContext {
  const QuantProblem& qp;
  const quant::RecipeSpec& r;
  int b, h, d;
  numerics::mma::Arch arch;
  numerics::mma::DotFunction f8 = nullptr, f16 = nullptr;
  float sl2 = 1.0f;            // scale_log2 as the recipe's kernel holds it
  const double* q8 = nullptr;  // (N_q, d) element values
  const double* k8 = nullptr;  // (N_kv, d)
  const double* v8 = nullptr;  // (N_kv, d)
  std::vector<double> qdeq = {}, kdeq = {}, vdeq = {};  // dequantized (block-scaled, no mma)

  bool tc() const { return arch != numerics::mma::Arch::none; }
};
QuantContext make_quant_context(const QuantProblem& qp, int b, int h);

// One row's online-softmax state.
struct QuantRowState {
  float m = -INFINITY;  // running max (raw scores, or z for SageAttention2's folded form)
  float l = 0.0f;
  float alpha = 0.0f;
  float ms = 0.0f;  // the exponent's subtrahend of the current block
};

// Row r's P of the current block: element values, their dequantized values, block scales.
struct QuantPBlock {
  std::vector<double> elem, deq, scale;  // (Bc), (Bc), (Bc / 16)
  std::vector<int> exps;                 // (Bc / 32) mx_blocks' e8m0 exponents
};

// P of one row's block from p (fp32, n keys), by the recipe's ProbForm; raw: the block's scores
// (nvfp4's block scales). Counts into stats.
void quantize_p_row(const QuantContext& c, const QuantRowState& st, const float* p,
                    const float* raw, int n, QuantPBlock& pb, quant::Stats& stats);

// Row i's dot with key j as the softmax reads it (before the score form), through the profile.
double quant_qk_dot(const QuantContext& c, int i, int j);
// The block's P V for column t (pb: row's P of keys j0 + [0, n)), through the profile, from acc.
double quant_pv_dot(const QuantContext& c, const QuantPBlock& pb, int j0, int n, int t, double acc);

// Row i's output from its state: O (d) in the output format, and lse.
void finish_quant_row(const QuantContext& c, const QuantRowState& st, const float* acc, double* o,
                      double& lse);

// kind::mxf4nvf4 (sm_100): per k64 instruction, four 16-element groups each summed exactly and
// multiplied by its two block scales, then fused with C, D toward zero to fp32. scale_a: one per
// 16 elements of a; scale_b: one per 16 of b, ss_b apart.
double nvf4_dot(const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb, int k,
                const double* scale_a, const double* scale_b, std::ptrdiff_t ss_b, double c);

// The fast form (fast_quant.cpp). Covers every recipe and shape the reference form runs except
// where an integer QK^T's exact sum could exceed float's 2^24 (head_dim above 1040).
bool quant_fast_covers(const QuantProblem& qp);
void run_quant_fast(const QuantProblem& qp, Output& out, std::vector<quant::Stats>& p_stats);

// A stage report from quantize.hpp's Stats.
QuantStageReport stage_report(const char* stage, const quant::Stats& s);

}  // namespace attndev::attention::detail
