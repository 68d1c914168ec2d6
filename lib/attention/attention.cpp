// Dispatch: the choice between generic and fast paths, names and descriptions. Validation and
// the input stage are problem.cpp's; the numerics of each algorithm are its row function in rows/.
#include "attention/attention.hpp"

#include <algorithm>

#include <stdexcept>
#include <string>

#include "attention/detail.hpp"
#include "attention/fast_kinds.hpp"
#include "attention/fp8_attention.hpp"
#include "attention/quant_attention.hpp"
#include "attention/quant_recipes.hpp"
#include "attention/twins/flash2_tc.hpp"
#include "attention/twins/twins.hpp"

namespace attndev::attention {

namespace detail {

std::size_t row_block_count(const Shape& shape, int rows) {
  const std::size_t blocks = static_cast<std::size_t>((shape.seq_q + rows - 1) / rows);
  return static_cast<std::size_t>(shape.batch) * shape.heads * blocks;
}

RowBlock row_block(const Shape& shape, int rows, std::size_t item) {
  const std::size_t blocks = static_cast<std::size_t>((shape.seq_q + rows - 1) / rows);
  const std::size_t bh = item / blocks;
  const int block = static_cast<int>(item % blocks);
  RowBlock rb;
  rb.b = static_cast<int>(bh / static_cast<std::size_t>(shape.heads));
  rb.h = static_cast<int>(bh % static_cast<std::size_t>(shape.heads));
  rb.row_begin = block * rows;
  rb.row_end = std::min(shape.seq_q, rb.row_begin + rows);
  return rb;
}

}  // namespace detail

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::baseline:
      return "baseline";
    case Algorithm::flash1:
      return "flash1";
    case Algorithm::flash2:
      return "flash2";
    case Algorithm::flash3_fp8:
      return "flash3-fp8";
    case Algorithm::flash3_fp8_per_tensor:
      return "flash3-fp8-per-tensor";
    case Algorithm::flash3_fp8_no_hadamard:
      return "flash3-fp8-no-hadamard";
    case Algorithm::baseline_fp8:
      return "baseline-fp8";
    case Algorithm::flash2_tc_twin:
      return "flash2-tc-twin";
    case Algorithm::fa2_cuda:
      return "fa2-cuda";
    case Algorithm::fa2_cuda_unfused:
      return "fa2-cuda-unfused";
    case Algorithm::mem_efficient:
      return "mem-efficient";
    case Algorithm::fa3_fp8:
      return "fa3-fp8";
    case Algorithm::fa3_fp8_paper:
      return "fa3-fp8-paper";
    case Algorithm::fa3_fp8_paper_per_tensor:
      return "fa3-fp8-paper-per-tensor";
    case Algorithm::fa3_fp8_paper_no_hadamard:
      return "fa3-fp8-paper-no-hadamard";
    case Algorithm::sage1:
      return "sage1";
    case Algorithm::sage2_8b:
      return "sage2-8b";
    case Algorithm::sage2_4b:
      return "sage2-4b";
    case Algorithm::sage2pp:
      return "sage2pp";
    case Algorithm::sage3:
      return "sage3";
    case Algorithm::mxfp8:
      return "mxfp8";
  }
  return "?";
}

bool parse_algorithm(std::string_view text, Algorithm& out) {
  for (Algorithm a : kAllAlgorithms) {
    if (text == algorithm_name(a)) {
      out = a;
      return true;
    }
  }
  for (Algorithm a : kFp8Algorithms) {
    if (text == algorithm_name(a)) {
      out = a;
      return true;
    }
  }
  for (Algorithm a : kTwinAlgorithms) {
    if (text == algorithm_name(a)) {
      out = a;
      return true;
    }
  }
  for (Algorithm a : kQuantAlgorithms) {
    if (text == algorithm_name(a)) {
      out = a;
      return true;
    }
  }
  return false;
}

const char* algorithm_description(Algorithm a) {
  switch (a) {
    case Algorithm::baseline:
      return "materialized S and P: S = scale*QK^T, P = softmax(S) with row-max subtraction, O = "
             "PV";
    case Algorithm::flash1:
      return "FlashAttention-1 (Alg. 1): outer loop over K/V blocks, O/l/m stored after each block";
    case Algorithm::flash2:
      return "FlashAttention-2: outer loop over Q blocks, unnormalized fp32 accumulator, exp2, LSE";
    case Algorithm::flash3_fp8:
      return "FlashAttention-3 fp8: flash2 on e4m3 Q/K/V with per-block scales and a random-sign "
             "Hadamard on Q, K (Options::fp8); P cast to the policy's prob format (e4m3)";
    case Algorithm::flash3_fp8_per_tensor:
      return "flash3-fp8 without block quantization: one e4m3 scale per tensor";
    case Algorithm::flash3_fp8_no_hadamard:
      return "flash3-fp8 without incoherent processing: no Hadamard rotation of Q and K";
    case Algorithm::baseline_fp8:
      return "FA-3's fp8 baseline: per-tensor scaled e4m3 Q/K/V, then baseline under the policy "
             "(softmax and P in the policy's stats/prob formats)";
    case Algorithm::flash2_tc_twin:
      return "twin of attndev's flash2-tc CUDA kernel, operation by operation (Bc = 64, d = 64 or "
             "128, per-lane row sums, quad reductions), both GEMMs on the policy's tensor-core "
             "profile (kernel-bf16/fp16 with \"mma\")";
    case Algorithm::fa2_cuda:
      return "twin of FlashAttention-2's CUDA forward as upstream builds it (Dao-AILab/"
             "flash-attention csrc/flash_attn/src/flash_fwd_kernel.h, softmax.h): its tiles and "
             "K/V splits per head dim and GPU, K/V blocks in reverse, exp2 argument one FFMA, "
             "per-thread row sums; kernel-bf16/fp16, GPU and tensor cores from \"mma\"";
    case Algorithm::fa2_cuda_unfused:
      return "fa2-cuda built with UNFUSE_FMA, as PyTorch builds it (SDPBackend.FLASH_ATTENTION, "
             "aten/src/ATen/native/transformers/cuda/flash_attn/CMakeLists.txt): the exp2 "
             "argument as FMUL then FADD";
    case Algorithm::mem_efficient:
      return "twin of PyTorch's memory-efficient CUDA kernel (SDPBackend.EFFICIENT_ATTENTION, "
             "aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernel_forward.h): K/V "
             "forward, scores times scale then log2(e), per-warp partial sums, alpha/beta "
             "epilogue; kernel-bf16/fp16, tensor cores from \"mma\"";
    // The quantized recipes describe themselves (quant_recipes.cpp's table).
    case Algorithm::fa3_fp8:
    case Algorithm::fa3_fp8_paper:
    case Algorithm::fa3_fp8_paper_per_tensor:
    case Algorithm::fa3_fp8_paper_no_hadamard:
    case Algorithm::sage1:
    case Algorithm::sage2_8b:
    case Algorithm::sage2_4b:
    case Algorithm::sage2pp:
    case Algorithm::sage3:
    case Algorithm::mxfp8:
      break;
  }
  if (const quant::RecipeSpec* r = quant::find_recipe(a)) return r->description;
  return "?";
}

const char* algorithm_source(Algorithm a) {
  if (const quant::RecipeSpec* r = quant::find_recipe(a)) return r->source;
  return "";
}

std::string unsupported_reason(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                               const Shape& shape, int block_r, int block_c) {
  if (algorithm == Algorithm::flash2_tc_twin) return twins::flash2_tc_unsupported(policy, shape);
  if (is_twin_algorithm(algorithm)) return twins::twin_unsupported_reason(algorithm, policy, shape);
  if (is_quant_algorithm(algorithm))
    return quant::recipe_unsupported(algorithm, policy.mma, shape, block_r, block_c);
  if (policy.mma != numerics::mma::Arch::none && is_fp8_algorithm(algorithm))
    return std::string(algorithm_name(algorithm)) +
           ": the tensor-core profile (\"mma\") is not modelled for the fp8 algorithms' own "
           "quantization; use flash2 or baseline with an fp8 input policy";
  return {};
}

const char* kernel_path(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                        const Options& options) {
  if (options.path == Options::Path::generic) return "generic";
  if (is_twin_algorithm(algorithm)) return "twin";
  if (is_quant_algorithm(algorithm)) return "quant";
  switch (detail::fast_kind(algorithm, policy)) {
    case detail::FastKind::f32:
      return "fast-f32";
    case detail::FastKind::f64:
      return "fast-f64";
    case detail::FastKind::none:
      break;
  }
  return "generic";
}

namespace {

Output empty_output(const Shape& s) {
  Output out;
  out.o = Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  return out;
}

void require_supported(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                       const Shape& shape, int block_r = 64, int block_c = 64) {
  if (const std::string why = unsupported_reason(algorithm, policy, shape, block_r, block_c);
      !why.empty())
    throw std::invalid_argument(why);
}

// The twins compute their kernels' own loops, which have no mask model (attention/mask.hpp):
// a mask is refused, never ignored.
void require_no_mask(Algorithm algorithm, const Problem& p) {
  if (p.mask)
    throw std::invalid_argument(std::string(algorithm_name(algorithm)) +
                                ": masks beyond the causal one are not modelled in the twins of "
                                "GPU kernels or the quantized recipes; use baseline, flash1, "
                                "flash2 or an fp8 algorithm");
}

}  // namespace

Output run_flash2_tc_twin(const numerics::PrecisionPolicy& policy, const Inputs& inputs,
                          const Options& options, const std::function<float(float)>& exp2) {
  const Problem p = make_problem(policy, inputs, options);
  require_no_mask(Algorithm::flash2_tc_twin, p);
  require_supported(Algorithm::flash2_tc_twin, policy, p.shape);
  Output out = empty_output(p.shape);
  twins::run_flash2_tc(p, exp2, out);
  return out;
}

Output run(Algorithm algorithm, const numerics::PrecisionPolicy& policy, const Inputs& inputs,
           const Options& options) {
  if (algorithm == Algorithm::flash2_tc_twin)
    return run_flash2_tc_twin(policy, inputs, options, {});
  const Problem p = make_problem(policy, inputs, options);
  // Neither the twins nor the quantized recipes have a mask model: refused, not ignored.
  if (is_twin_algorithm(algorithm) || is_quant_algorithm(algorithm)) require_no_mask(algorithm, p);
  require_supported(algorithm, policy, p.shape, p.block_r, p.block_c);
  const Shape s = p.shape;
  Output out = empty_output(s);
  if (is_twin_algorithm(algorithm)) {
    twins::run_twin(algorithm, p, out);
    return out;
  }
  if (is_quant_algorithm(algorithm)) {
    if (policy.model == numerics::Model::framework)
      throw std::invalid_argument(std::string(algorithm_name(algorithm)) +
                                  " models a kernel: the framework rounding model does not "
                                  "apply; use a kernel-model policy such as kernel-fp16");
    detail::run_quant(algorithm, p, options.fp8, options.path, out);
    return out;
  }
  detail::require_fp8_policy(algorithm, policy);
  const detail::FastKind kind = options.path == Options::Path::generic
                                    ? detail::FastKind::none
                                    : detail::fast_kind(algorithm, policy);
  if (is_fp8_algorithm(algorithm)) {
    detail::run_fp8(algorithm, p, options.fp8, kind, out);
    return out;
  }
  if (kind == detail::FastKind::none) {
    detail::run_generic(algorithm, p, out);
  } else {
    detail::run_fast(algorithm, p, kind, out);
  }
  return out;
}

Output golden(const Inputs& inputs, const Options& options) {
  return run(Algorithm::baseline, numerics::kGoldenPolicy, inputs, options);
}

double forward_flops(const Shape& shape, bool causal) {
  // The sum over rows of rows::visible_count, in closed form: row i sees clamp(i + N_kv - N_q + 1,
  // 0, N_kv) keys (a loop over rows made `attndev plan` of 10^6 points take minutes).
  const long long n_q = std::max(shape.seq_q, 0), n_kv = std::max(shape.seq_kv, 0);
  long long pairs = n_q * n_kv;
  if (causal) {
    const long long lo = n_kv - n_q + 1, hi = n_kv;  // row 0 sees lo keys, the last row hi
    const long long first = std::max(lo, 1LL);       // rows seeing fewer than 1 key add nothing
    pairs = first <= hi ? (first + hi) * (hi - first + 1) / 2 : 0;
  }
  return 4.0 * shape.batch * shape.heads * static_cast<double>(pairs) * shape.head_dim;
}

}  // namespace attndev::attention
