// Dispatch: the choice between generic and fast paths, names and descriptions. Validation and
// the input stage are problem.cpp's; the numerics of each algorithm are its row function in rows/.
#include "attention/attention.hpp"

#include <stdexcept>
#include <string>

#include "attention/detail.hpp"
#include "attention/fast_kinds.hpp"
#include "attention/fp8_attention.hpp"

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
  }
  return "?";
}

const char* kernel_path(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                        const Options& options) {
  if (options.path == Options::Path::generic) return "generic";
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

Output run(Algorithm algorithm, const numerics::PrecisionPolicy& policy, const Inputs& inputs,
           const Options& options) {
  const Problem p = make_problem(policy, inputs, options);
  const Shape s = p.shape;
  Output out;
  out.o = Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
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
  double pairs = 0;
  for (int i = 0; i < shape.seq_q; ++i)
    pairs += rows::visible_count(i, shape.seq_q, shape.seq_kv, causal);
  return 4.0 * shape.batch * shape.heads * pairs * shape.head_dim;
}

}  // namespace attndev::attention
