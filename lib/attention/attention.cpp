// Dispatch: validation, the input stage, the choice between generic and fast paths, and the
// split of the work over threads. The numerics of each algorithm live in its own file.
#include "attention/attention.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "attention/detail.hpp"
#include "attention/fp8_attention.hpp"
#include "numerics/round.hpp"

namespace attndev::attention {

namespace {

using numerics::Format;

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

void validate_tensor(const Tensor& t, const char* name) {
  const std::string n(name);
  require(t.batch >= 1,
          "inputs." + n + ".batch must be >= 1 (got " + std::to_string(t.batch) + ")");
  require(t.heads >= 1,
          "inputs." + n + ".heads must be >= 1 (got " + std::to_string(t.heads) + ")");
  require(t.rows >= 1, "inputs." + n + ".rows (sequence length) must be >= 1 (got " +
                           std::to_string(t.rows) + "): empty tensor");
  require(t.cols >= 1,
          "inputs." + n + ".cols (head_dim) must be >= 1 (got " + std::to_string(t.cols) + ")");
  const std::size_t expected = static_cast<std::size_t>(t.batch) * t.heads * t.rows * t.cols;
  require(t.data.size() == expected,
          "inputs." + n + ".data has " + std::to_string(t.data.size()) +
              " elements but batch*heads*rows*cols = " + std::to_string(expected));
}

void validate(const Inputs& in, const Options& options) {
  validate_tensor(in.q, "q");
  validate_tensor(in.k, "k");
  validate_tensor(in.v, "v");
  auto same = [&](const Tensor& t, const char* name) {
    const std::string n(name);
    require(t.batch == in.q.batch && t.heads == in.q.heads,
            "inputs." + n + " has (batch, heads) = (" + std::to_string(t.batch) + ", " +
                std::to_string(t.heads) + ") but q has (" + std::to_string(in.q.batch) + ", " +
                std::to_string(in.q.heads) + ")");
    require(t.cols == in.q.cols, "inputs." + n + ".cols (head_dim) = " + std::to_string(t.cols) +
                                     " differs from q.cols = " + std::to_string(in.q.cols));
  };
  same(in.k, "k");
  same(in.v, "v");
  require(in.v.rows == in.k.rows, "inputs.v.rows = " + std::to_string(in.v.rows) +
                                      " differs from k.rows = " + std::to_string(in.k.rows) +
                                      " (K and V must have the same sequence length)");
  require(options.block_r >= 1,
          "options.block_r (Br) must be >= 1 (got " + std::to_string(options.block_r) + ")");
  require(options.block_c >= 1,
          "options.block_c (Bc) must be >= 1 (got " + std::to_string(options.block_c) + ")");
  require(options.threads >= 0, "options.threads must be >= 0 (0: all hardware threads; got " +
                                    std::to_string(options.threads) + ")");
  if (options.scale) {
    require(
        std::isfinite(*options.scale) && *options.scale != 0.0,
        "options.scale must be finite and non-zero (got " + std::to_string(*options.scale) + ")");
  }
}

// The input stage: Q, K, V as stored in memory in the policy's input format (a no-op for inputs
// that the producer already rounded). Under ScalePlacement::query the scale is folded into Q
// here: Q' = R_input(q * scale), the product taken in double.
detail::Problem make_problem(const numerics::PrecisionPolicy& policy, const Inputs& in,
                             const Options& options) {
  detail::Problem p;
  p.policy = policy;
  p.shape = in.shape();
  p.causal = options.causal;
  p.block_r = options.block_r;
  p.block_c = options.block_c;
  p.threads = options.threads;
  p.schedule_seed = options.schedule_seed;
  p.scale = options.scale ? *options.scale : 1.0 / std::sqrt(static_cast<double>(in.q.cols));
  p.scale_in_query = options.scale_placement == ScalePlacement::query;
  p.q = in.q;
  p.k = in.k;
  p.v = in.v;
  const double q_factor = p.scale_in_query ? p.scale : 1.0;
  for (double& x : p.q.data) x = policy.round(numerics::Stage::input, x * q_factor);
  for (double& x : p.k.data) x = policy.round(numerics::Stage::input, x);
  for (double& x : p.v.data) x = policy.round(numerics::Stage::input, x);
  return p;
}

void run_generic(Algorithm algorithm, const detail::Problem& p, Output& out) {
  const int rows = algorithm == Algorithm::baseline ? detail::kBaselineRowBlock : p.block_r;
  const std::size_t items = detail::row_block_count(p.shape, rows);
  detail::parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const detail::RowBlock rb = detail::row_block(p.shape, rows, item);
    switch (algorithm) {
      case Algorithm::baseline:
        detail::baseline_generic(p, rb, out);
        break;
      case Algorithm::flash1:
        detail::flash1_generic(p, rb, out);
        break;
      case Algorithm::flash2:
        detail::flash2_generic(p, rb, out);
        break;
      default:
        throw std::logic_error("run_generic: fp8 algorithms run through run_fp8");
    }
  });
}

bool all_stages(const numerics::PrecisionPolicy& policy, Format f) {
  for (numerics::Stage s : numerics::kAllStages)
    if (policy[s] != f) return false;
  return true;
}

// Formats the float path can hold exactly and round to with float bit operations.
bool float_storage(Format f) {
  return f == Format::fp32 || f == Format::tf32 || f == Format::bf16 || f == Format::fp16;
}

}  // namespace

namespace detail {

// Fast paths are exact replicas of the generic path only where float (or double) arithmetic *is*
// the policy's arithmetic: every stage that does arithmetic (score_accum, stats, out_accum) must
// be fp32 (resp. fp64), because computing a narrower format's + or * in float and rounding
// afterwards is not single rounding in general (fma, wide operands). Storage-only stages (input,
// score, prob, output) may be any format whose rounding from float is one bit operation.
FastKind fast_kind(Algorithm algorithm, const numerics::PrecisionPolicy& policy) {
  if (algorithm == Algorithm::flash1) return FastKind::none;  // FA-1 is studied, not timed
  if (is_fp8_algorithm(algorithm)) return FastKind::none;     // generic only (fp8_attention.hpp)
  if (all_stages(policy, Format::fp64)) return FastKind::f64;
  if (policy.score_accum == Format::fp32 && policy.stats == Format::fp32 &&
      policy.out_accum == Format::fp32 && float_storage(policy.input) &&
      float_storage(policy.score) && float_storage(policy.prob) && float_storage(policy.output))
    return FastKind::f32;
  return FastKind::none;
}

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
  validate(inputs, options);
  const detail::Problem p = make_problem(policy, inputs, options);
  const Shape s = p.shape;
  Output out;
  out.o = Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  if (is_fp8_algorithm(algorithm)) {
    detail::run_fp8(algorithm, p, options.fp8, out);
    return out;
  }
  const detail::FastKind kind = options.path == Options::Path::generic
                                    ? detail::FastKind::none
                                    : detail::fast_kind(algorithm, policy);
  if (kind == detail::FastKind::none) {
    run_generic(algorithm, p, out);
    return out;
  }
  switch (algorithm) {
    case Algorithm::baseline:
      detail::baseline_fast(p, kind, out);
      break;
    case Algorithm::flash1:
      run_generic(algorithm, p, out);
      break;
    case Algorithm::flash2:
      detail::flash2_fast(p, kind, out);
      break;
    default:
      run_generic(algorithm, p, out);
      break;
  }
  return out;
}

Output golden(const Inputs& inputs, const Options& options) {
  return run(Algorithm::baseline, numerics::kGoldenPolicy, inputs, options);
}

double forward_flops(const Shape& shape, bool causal) {
  double pairs = 0;
  for (int i = 0; i < shape.seq_q; ++i)
    pairs += detail::visible_count(i, shape.seq_q, shape.seq_kv, causal);
  return 4.0 * shape.batch * shape.heads * pairs * shape.head_dim;
}

}  // namespace attndev::attention
