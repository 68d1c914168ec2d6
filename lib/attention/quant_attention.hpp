// Internals of the quantized recipes (quant_recipes.hpp): the prepared problem (transformed and
// quantized Q, K, V with the smoothing correction dS) and the one loop every recipe runs
// (quant_attention.cpp). Not part of the public API.
#pragma once

#include <vector>

#include "attention/detail.hpp"
#include "attention/quant_recipes.hpp"
#include "attention/quantize.hpp"

namespace attndev::attention::detail {

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
};

// Transforms and quantizes p's Q, K, V by the recipe's rules (quantize.hpp), filling the q, k, v
// stage reports of out.quant. Throws std::invalid_argument for a shape the recipe cannot tile.
QuantProblem prepare_quant(Algorithm algorithm, const Problem& p, const Options::Fp8& options,
                           Output& out);

// Runs a quantized recipe: prepare_quant, then the rows over row blocks on p.threads threads;
// appends the p stage's report.
void run_quant(Algorithm algorithm, const Problem& p, const Options::Fp8& options, Output& out);

// A stage report from quantize.hpp's Stats.
QuantStageReport stage_report(const char* stage, const quant::Stats& s);

}  // namespace attndev::attention::detail
