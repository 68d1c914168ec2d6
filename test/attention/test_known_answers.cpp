// Known answers: results worked out by hand, inputs whose result is exact under every policy,
// masking conventions, and argument validation.
#include <cmath>
#include <ios>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention/detail.hpp"
#include "attention/rows/softmax.hpp"
#include "helpers.hpp"
#include "numerics/math.hpp"
#include "numerics/policy.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

Inputs from_rows(int n_q, int n_kv, int d, std::initializer_list<double> q,
                 std::initializer_list<double> k, std::initializer_list<double> v) {
  Inputs in;
  in.q = Tensor(1, 1, n_q, d);
  in.k = Tensor(1, 1, n_kv, d);
  in.v = Tensor(1, 1, n_kv, d);
  in.q.data.assign(q);
  in.k.data.assign(k);
  in.v.data.assign(v);
  return in;
}

}  // namespace

// S = QK^T with scale 1: row 0 scores (1, 0), row 1 scores (0, 0).
// Row 0: P = (e, 1)/(e + 1), O = (e V0 + V1)/(e + 1), lse = log(e + 1).
// Row 1: P = (1/2, 1/2), O = (V0 + V1)/2, lse = log 2. Causal: row 0 sees key 0 only: O = V0.
TEST_CASE("2x2 attention worked out by hand", "[attention][known]") {
  const Inputs in = from_rows(2, 2, 2, {1, 0, 0, 0}, {1, 0, 0, 0}, {2, -4, 6, 8});
  const double e = std::exp(1.0);
  for (Algorithm a : kAllAlgorithms) {
    for (int bc : {1, 2}) {
      Options opt;
      opt.scale = 1.0;
      opt.block_r = 1;
      opt.block_c = bc;
      INFO(algorithm_name(a) << " Bc=" << bc);
      const Output r = run(a, nx::kGoldenPolicy, in, opt);
      const double o00 = (e * 2 + 6) / (e + 1), o01 = (e * -4 + 8) / (e + 1);
      CHECK(r.o.at(0, 0, 0, 0) == Approx(o00).epsilon(1e-14));
      CHECK(r.o.at(0, 0, 0, 1) == Approx(o01).epsilon(1e-14));
      CHECK(r.o.at(0, 0, 1, 0) == Approx(4.0).epsilon(1e-14));
      CHECK(r.o.at(0, 0, 1, 1) == Approx(2.0).epsilon(1e-14));
      CHECK(r.lse[0] == Approx(std::log(e + 1)).epsilon(1e-14));
      CHECK(r.lse[1] == Approx(std::log(2.0)).epsilon(1e-14));

      opt.causal = true;
      const Output c = run(a, nx::kGoldenPolicy, in, opt);
      CHECK(c.o.at(0, 0, 0, 0) == 2.0);  // one visible key: P = 1 exactly
      CHECK(c.o.at(0, 0, 0, 1) == -4.0);
      CHECK(c.lse[0] == Approx(1.0).epsilon(1e-14));
      CHECK(c.o.at(0, 0, 1, 0) == Approx(4.0).epsilon(1e-14));
    }
  }
}

// K = 0: every score is 0, so every p is exp(0) = 1 and l counts the keys. With N_kv a power of
// two, 1/N is exact in every format, and O = mean of a constant column = that constant, exactly.
TEST_CASE("constant V columns give O equal to the constant under every policy",
          "[attention][exact]") {
  for (const nx::PolicyPreset& pp : nx::kPolicyPresets) {
    for (int n_kv : {1, 8, 64}) {
      Shape s{1, 2, 13, n_kv, 5};
      Inputs in = random_inputs(s, /*seed=*/7, pp.policy.input);
      for (double& x : in.k.data) x = 0.0;
      for (int h = 0; h < 2; ++h)
        for (int j = 0; j < n_kv; ++j)
          for (int t = 0; t < 5; ++t) in.v.at(0, h, j, t) = (t - 2) * (h + 1);  // small integers
      for (Algorithm a : kAllAlgorithms) {
        for (int bc : {1, 3, 64}) {
          Options opt;
          opt.block_r = 4;
          opt.block_c = bc;
          INFO(pp.name << " " << algorithm_name(a) << " " << describe(s, opt));
          const Output r = run(a, pp.policy, in, opt);
          std::size_t wrong = 0;
          for (int h = 0; h < 2; ++h)
            for (int i = 0; i < s.seq_q; ++i)
              for (int t = 0; t < 5; ++t) wrong += r.o.at(0, h, i, t) != (t - 2) * (h + 1);
          CHECK(wrong == 0);
        }
      }
    }
  }
}

// Q_i = 128 e_{sigma(i)}, K = I: the score of key sigma(i) is 128, every other score 0, and
// exp(-128) underflows to exactly 0 in fp32 (and narrower). So P is exactly one-hot and O_i is
// exactly V_{sigma(i)} for every policy whose statistics are at most fp32.
TEST_CASE("one-hot scores select one row of V exactly", "[attention][exact]") {
  const int n = 37;
  Shape s{1, 1, n, n, n};
  for (const nx::PolicyPreset& pp : nx::kPolicyPresets) {
    if (pp.policy.stats == nx::Format::fp64) continue;  // exp(-128) is not 0 in fp64
    Inputs in = random_inputs(s, /*seed=*/11, pp.policy.input);
    for (double& x : in.q.data) x = 0.0;
    for (double& x : in.k.data) x = 0.0;
    for (int i = 0; i < n; ++i) {
      in.q.at(0, 0, i, (i * 5 + 3) % n) = 128.0;
      in.k.at(0, 0, i, i) = 1.0;
      for (int t = 0; t < n; ++t) in.v.at(0, 0, i, t) = ((i + 2 * t) % 9) - 4;
    }
    for (Algorithm a : kAllAlgorithms) {
      Options opt;
      opt.scale = 1.0;
      opt.block_r = 5;
      opt.block_c = 6;
      INFO(pp.name << " " << algorithm_name(a));
      const Output r = run(a, pp.policy, in, opt);
      std::size_t wrong = 0;
      for (int i = 0; i < n; ++i)
        for (int t = 0; t < n; ++t)
          wrong += r.o.at(0, 0, i, t) != in.v.at(0, 0, (i * 5 + 3) % n, t);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("fully masked rows give O = 0 and lse = -inf, never NaN", "[attention][mask]") {
  Shape s{2, 1, 9, 4, 3};  // causal with N_q > N_kv: rows 0..4 see nothing
  const Inputs in = random_inputs(s, /*seed=*/3, nx::Format::bf16);
  for (const char* name : {"kernel-bf16", "torch-math-bf16", "working-bf16", "fp64", "fp8-e4m3"}) {
    for (Algorithm a : kAllAlgorithms) {
      Options opt;
      opt.causal = true;
      opt.block_r = 2;
      opt.block_c = 3;
      INFO(name << " " << algorithm_name(a));
      const Output r = run(a, preset(name), in, opt);
      for (int b = 0; b < 2; ++b) {
        for (int i = 0; i < 9; ++i) {
          const bool empty = i < 5;
          const double lse = r.lse[static_cast<std::size_t>(b) * 9 + i];
          CHECK(!std::isnan(lse));
          CHECK((lse == -std::numeric_limits<double>::infinity()) == empty);
          for (int t = 0; t < 3; ++t) {
            const double x = r.o.at(b, 0, i, t);
            CHECK(std::isfinite(x));
            if (empty) CHECK(x == 0.0);
          }
        }
      }
    }
  }
}

// The one rule for a row none of whose visible scores is above -inf (rows/softmax.hpp): O = 0 and
// lse = -inf in every algorithm, on the generic and the fast path alike. Row 0 of a causal
// problem sees key 0 only; its score, -5e5, overflows the fp16 score format to -inf. (Before the
// rule was shared, baseline gave NaN here while flash1/flash2 and the GPU baseline gave 0.)
TEST_CASE("a row whose visible scores are all -inf gives O = 0 and lse = -inf",
          "[attention][mask]") {
  const Shape s{1, 1, 6, 6, 4};
  Inputs in = random_inputs(s, /*seed=*/5, nx::Format::fp16);
  in.q.at(0, 0, 0, 0) = 1000.0;
  in.k.at(0, 0, 0, 0) = -1000.0;  // S_00 = -1000 * 1000 * 0.5 -> -inf in fp16
  for (int t = 1; t < 4; ++t) in.q.at(0, 0, 0, t) = in.k.at(0, 0, 0, t) = 0.0;
  for (const char* name : {"torch-math-fp16", "working-fp16"}) {
    for (Algorithm a : kAllAlgorithms) {
      for (Options::Path path : {Options::Path::automatic, Options::Path::generic}) {
        Options opt;
        opt.causal = true;
        opt.block_r = 2;
        opt.block_c = 4;
        opt.path = path;
        INFO(name << " " << algorithm_name(a) << " " << kernel_path(a, preset(name), opt));
        const Output r = run(a, preset(name), in, opt);
        CHECK(r.lse[0] == -std::numeric_limits<double>::infinity());
        for (int t = 0; t < 4; ++t) CHECK(r.o.at(0, 0, 0, t) == 0.0);
        for (int i = 1; i < 6; ++i) {  // the other rows see finite scores: ordinary results
          CHECK(std::isfinite(r.lse[static_cast<std::size_t>(i)]));
          for (int t = 0; t < 4; ++t) CHECK(std::isfinite(r.o.at(0, 0, i, t)));
        }
      }
    }
  }
  // The rule is about scores at -inf, not about overflow as such: a score that overflows to
  // +inf is a failure of the policy and must show as NaN.
  in.k.at(0, 0, 0, 0) = 1000.0;
  const Output plus = run(Algorithm::baseline, preset("torch-math-fp16"), in, Options{});
  CHECK(std::isnan(plus.o.at(0, 0, 0, 0)));
}

TEST_CASE("causal mask is bottom-right aligned", "[attention][mask]") {
  for (int n_q : {1, 4, 9})
    for (int n_kv : {1, 4, 9})
      for (int i = 0; i < n_q; ++i) {
        int count = 0;
        for (int j = 0; j < n_kv; ++j) count += causal_visible(i, j, n_q, n_kv);
        // The visible keys are a prefix, and the last query row sees every key.
        CHECK(detail::visible_count(i, n_q, n_kv, /*causal=*/true) == count);
        for (int j = 0; j < count; ++j) CHECK(causal_visible(i, j, n_q, n_kv));
        if (i == n_q - 1) CHECK(count == n_kv);
      }
}

// flash2 leaves a row untouched by a K/V block it cannot see, where the kernel rescales by
// exp2(0); the two agree only because exp2(0) is exactly 1. Pin that precondition here.
TEST_CASE("exp2(0) and exp(0) are exactly 1 in every stats format", "[attention][precondition]") {
  for (nx::Format f : nx::kAllFormats) {
    CHECK(nx::exp2_in(f, 0.0) == 1.0);
    CHECK(nx::exp_in(f, 0.0) == 1.0);
  }
}

TEST_CASE("invalid arguments throw std::invalid_argument naming the field",
          "[attention][validation]") {
  const Shape s{1, 2, 5, 6, 4};
  const Inputs good = random_inputs(s, /*seed=*/1, nx::Format::fp32);
  const nx::PrecisionPolicy pol = preset("fp32");
  auto message = [&](const Inputs& in, const Options& opt) -> std::string {
    try {
      run(Algorithm::flash2, pol, in, opt);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no exception)";
  };
  Options opt;
  CHECK_NOTHROW(run(Algorithm::flash2, pol, good, opt));
  opt.block_r = 0;
  CHECK_THAT(message(good, opt), Catch::Contains("block_r"));
  opt = Options{};
  opt.block_c = -3;
  CHECK_THAT(message(good, opt), Catch::Contains("block_c"));
  opt = Options{};
  opt.threads = -1;
  CHECK_THAT(message(good, opt), Catch::Contains("threads"));

  Inputs bad = good;
  bad.k = Tensor(1, 2, 6, 3);
  CHECK_THAT(message(bad, Options{}), Catch::Contains("k.cols"));
  bad = good;
  bad.v = Tensor(1, 2, 7, 4);
  CHECK_THAT(message(bad, Options{}), Catch::Contains("v.rows"));
  bad = good;
  bad.v = Tensor(1, 1, 6, 4);
  CHECK_THAT(message(bad, Options{}), Catch::Contains("inputs.v"));
  bad = good;
  bad.q = Tensor(1, 2, 0, 4);
  CHECK_THAT(message(bad, Options{}), Catch::Contains("q.rows"));
  bad = good;
  bad.q = Tensor(1, 2, 5, 0);
  CHECK_THAT(message(bad, Options{}), Catch::Contains("q.cols"));
  bad = good;
  bad.q.data.pop_back();
  CHECK_THAT(message(bad, Options{}), Catch::Contains("q.data"));
  opt = Options{};
  opt.scale = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(message(good, opt), Catch::Contains("scale"));
}

// The vector form's row sum (rows::lane_sum, PyTorch's CPU flash kernel): 8 lanes, key j into lane
// j % 8, the lanes reduced by halves as AVX2's vec_reduce_all does. The values are picked so that
// every other order gives another fp32 result (2^24 + 1 rounds back to 2^24): lanes reduced by
// halves 24, lanes reduced in order 21, lanes reduced as adjacent pairs 22, one running sum 23
// (worked out in float32 arithmetic; see docs/numerics.md).
TEST_CASE("lane_sum adds in 8 lanes reduced by halves (vec_reduce_all's order)",
          "[attention][known][torch]") {
  namespace rows = attndev::attention::rows;
  const rows::PolicyArith a{attndev::numerics::find_preset("torch-cpu-flash-bf16")->policy};
  constexpr double B = 16777216.0;  // 2^24
  const double x[16] = {-B, 3, B, 1, 1, B, 3, 3, -B, 3, 1, 3, 3, 1, -B, B};
  const rows::Held stats{attndev::numerics::Stage::stats};
  CHECK(rows::lane_sum(a, stats, x, 16, 8) == 24.0);
  CHECK(rows::sum_into(a, stats, 0.0, x, 16) == 23.0);  // FA-2's sequential row sum differs
  CHECK(rows::lane_sum(a, stats, x, 0, 8) == 0.0);
  // One lane is the sequential sum.
  CHECK(rows::lane_sum(a, stats, x, 16, 1) == 23.0);
}

// The AVX-512 build's row sum: 16 lanes, key j into lane j % 16, reduced by halves (lane i meets
// lane i ^ 8, ^ 4, ^ 2, ^ 1: vec_reduce_all's shuffles, which on lane 0's chain is i + half). Over
// 32 keys the lanes hold two keys each where the AVX2 build's 8 lanes hold four, so the orders
// differ: 16 lanes by halves 40, 8 lanes by halves 44, 16 lanes reduced in order 43, one running
// sum 44 (the exact sum is 45; worked out in float32 arithmetic).
TEST_CASE("lane_sum adds in 16 lanes reduced by halves (AVX-512's vec_reduce_all)",
          "[attention][known][torch]") {
  namespace rows = attndev::attention::rows;
  const rows::PolicyArith a{attndev::numerics::find_preset("torch-cpu-flash-avx512-bf16")->policy};
  constexpr double B = 16777216.0;  // 2^24
  const double x[32] = {2, 1, 1, 3, 1, 1, 3, -B, 2, B, 1, 2,  3, 3, 2, -B,
                        1, 2, B, B, 2, 3, B, -B, 1, 2, 1, -B, 1, 1, 3, 3};
  const rows::Held stats{attndev::numerics::Stage::stats};
  CHECK(rows::lane_sum(a, stats, x, 32, 16) == 40.0);
  CHECK(rows::lane_sum(a, stats, x, 32, 8) == 44.0);
  CHECK(rows::sum_into(a, stats, 0.0, x, 32) == 44.0);
}

// With P in bf16/fp16 the kernel sums in two registers (a VectorizedN<float, 2>, as wide as one
// vector of the 16-bit type): keys in groups of 2 x 8 on AVX2, a last vector of 8 past the last
// group in a tail register, then register 0 + tail, + register 1, then halves. Over 24 keys
// (one group and a tail vector) that gives 31 where one register gives 33 (the exact and the
// sequential sums are 33 too); over 32 keys (two groups, no tail) 2 x 8 lanes equal 16 lanes of
// one register, 40, and differ from 8 lanes of one, 44 (the 32 values of the test above).
TEST_CASE("lane_sum with two registers: groups of two vectors, a tail vector, then halves",
          "[attention][known][torch]") {
  namespace rows = attndev::attention::rows;
  const rows::PolicyArith a{attndev::numerics::find_preset("torch-cpu-flash-fp16")->policy};
  constexpr double B = 16777216.0;  // 2^24
  const double x24[24] = {B, 1,  2, 2, B, 3, 3, 2,  1, 1, 1,  2,
                          1, -B, 1, 2, 2, B, 2, -B, 3, 3, -B, 1};
  const double x32[32] = {2, 1, 1, 3, 1, 1, 3, -B, 2, B, 1, 2,  3, 3, 2, -B,
                          1, 2, B, B, 2, 3, B, -B, 1, 2, 1, -B, 1, 1, 3, 3};
  const rows::Held stats{attndev::numerics::Stage::stats};
  CHECK(rows::lane_sum(a, stats, x24, 24, 8, 2) == 31.0);
  CHECK(rows::lane_sum(a, stats, x24, 24, 8, 1) == 33.0);
  CHECK(rows::lane_sum(a, stats, x32, 32, 8, 2) == 40.0);
  CHECK(rows::lane_sum(a, stats, x32, 32, 16, 1) == 40.0);
  CHECK(rows::lane_sum(a, stats, x32, 32, 8, 1) == 44.0);
}

// The row sum's order against PyTorch's own logsumexp (scripts/torch_cpu_probes.py's "sum" probe,
// PyTorch 2.15.0, one row each): one query row q = e_0, keys k_j = x_j e_0 in fp16, scale 1, so
// the scores are x (row max 0, key 0) and every key is a vector lane (24 = 3 x 8 keys on AVX2,
// 48 = 3 x 16 on AVX-512): p_j = fexp_u20(x_j), l their fp32 sum in the kernel's order and
// lse = m + log(l) = log(l). PyTorch returned lse = logf(l) below (neither value within a third of
// an ulp of a tie, so the correctly rounded log of the twin's l must equal it). One register
// instead of two gives l = 0x1.7b033ap+0 (AVX2) and 0x1.f4565p+0 (AVX-512), whose logs are other
// floats.
TEST_CASE("the vector form's row sum reproduces PyTorch's logsumexp on crafted rows",
          "[attention][known][torch]") {
  struct Row {
    const char* preset;
    std::vector<double> x;
    float torch_lse;
  };
  const Row rows[] = {
      {"torch-cpu-flash-fp16",
       {0,  -2,  -5,  -5,  -10, -5,  -10, -2, -5, -5, -5, -10,
        -5, -10, -10, -10, -10, -10, -5,  -5, -5, -5, -2, -10},
       0x1.91cf3cp-2f},
      {"torch-cpu-flash-avx512-fp16",
       {0,   -10, -10, -10, -5,  -5, -10, -2,  -10, -10, -5,  -5, -5,  -5,  -5,  -5,
        -10, -10, -10, -10, -10, -5, -5,  -10, -2,  -2,  -5,  -5, -10, -10, -5,  -5,
        -5,  -2,  -5,  -10, -5,  -5, -2,  -10, -5,  -5,  -10, -5, -10, -10, -10, -2},
       0x1.5717f4p-1f},
  };
  for (const Row& row : rows) {
    const int n = static_cast<int>(row.x.size());
    Inputs in;
    in.q = Tensor(1, 1, 1, 2);
    in.k = Tensor(1, 1, n, 2);
    in.v = Tensor(1, 1, n, 2);
    in.q.data = {1.0, 0.0};
    for (int j = 0; j < n; ++j) in.k.at(0, 0, j, 0) = row.x[static_cast<std::size_t>(j)];
    Options opt;
    opt.scale = 1.0;
    opt.block_r = 1;
    opt.block_c = 512;
    const Output r = run(Algorithm::flash2, nx::find_preset(row.preset)->policy, in, opt);
    INFO(row.preset << ", " << n << " keys: the twin's lse " << std::hexfloat
                    << static_cast<float>(r.lse[0]) << ", PyTorch's " << row.torch_lse);
    CHECK(static_cast<float>(r.lse[0]) == row.torch_lse);
  }
}

// Which keys get the scalar exp depends on the build's lanes: one query row, 24 keys in one K/V
// block, scale 1, scores (0, -1000 x 19, -1, -1000 x 3), V = e_0 for key 0 and e_1 for key 20.
// With fp32 P and O (a custom policy: the kernel's fp32 instantiation, exp_u20 in the lanes) the
// output is O = (1, p_20) / (1 + p_20) in float, so p_20 shows. AVX2: 24 keys are three vectors of
// 8, key 20 is a lane and gets exp_u20(-1); AVX-512: one vector of 16 and a scalar tail of 8, key
// 20 is in the tail and gets libm's expf(-1) (e^-1 correctly rounded). The two differ at -1.
TEST_CASE("the vector form's scalar tail follows the build's lanes (8 or 16)",
          "[attention][known][torch]") {
  std::vector<double> k(24 * 2, 0.0), v(24 * 2, 0.0);
  for (int j = 1; j < 24; ++j) k[static_cast<std::size_t>(2 * j)] = -1000.0;
  k[2 * 20] = -1.0;
  v[0] = 1.0;
  v[2 * 20 + 1] = 1.0;
  Inputs in;
  in.q = Tensor(1, 1, 1, 2);
  in.k = Tensor(1, 1, 24, 2);
  in.v = Tensor(1, 1, 24, 2);
  in.q.data = {1.0, 0.0};
  in.k.data = k;
  in.v.data = v;
  Options opt;
  opt.scale = 1.0;
  opt.block_r = 1;
  opt.block_c = 512;
  struct Build {
    const char* base;
    float p20;
  };
  const Build builds[] = {{"torch-cpu-flash-bf16", nx::exp_u20_f32(-1.0f)},
                          {"torch-cpu-flash-avx512-bf16", nx::libm_expf(-1.0f)}};
  REQUIRE(builds[0].p20 != builds[1].p20);
  for (const Build& b : builds) {
    nx::PrecisionPolicy pol = nx::find_preset(b.base)->policy;
    pol.input = pol.prob = pol.output = nx::Format::fp32;
    INFO(b.base << " with fp32 input, P and O");
    const Output r = run(Algorithm::flash2, pol, in, opt);
    const float inv_l = 1.0f / (1.0f + b.p20);
    CHECK(r.o.at(0, 0, 0, 0) == static_cast<double>(inv_l));
    CHECK(r.o.at(0, 0, 0, 1) == static_cast<double>(b.p20 * inv_l));
  }
}
