#include "attention/problem.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "numerics/math.hpp"
#include "numerics/round.hpp"

namespace attndev::attention {

namespace {

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

}  // namespace

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

Problem make_problem(const numerics::PrecisionPolicy& policy, const Inputs& in,
                     const Options& options) {
  validate(in, options);
  if (const std::string e = numerics::mma_policy_error(policy); !e.empty())
    throw std::invalid_argument("policy: " + e);
  Problem p;
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

// The scale in the format the score multiply computes in: a kernel's float softmax_scale, a
// framework's Python float converted to fp32 opmath.
double Problem::score_scale() const {
  return numerics::round_to(policy.compute(numerics::Stage::score_accum), scale);
}

double Problem::scale_log2() const {
  return policy.round(numerics::Stage::stats, (scale_in_query ? 1.0 : scale) * numerics::kLog2e);
}

rows::Params Problem::row_params() const {
  rows::Params r;
  r.seq_q = shape.seq_q;
  r.seq_kv = shape.seq_kv;
  r.head_dim = shape.head_dim;
  r.block_c = block_c;
  r.causal = causal;
  r.scale_scores = !scale_in_query;
  r.score_scale = score_scale();
  r.scale_log2 = scale_log2();
  r.lse_scale = scale_in_query ? 1.0 : scale;
  r.policy = policy;
  return r;
}

}  // namespace attndev::attention
