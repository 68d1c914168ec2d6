// Accuracy against the FP64 golden: the flash algorithms under the fp64 policy are the same
// function as the golden up to fp64 rounding; lower precisions deviate more; and FlashAttention's
// own acceptance rule holds for the kernel policy against the framework baseline.
#include <cmath>
#include <limits>
#include <vector>

#include "helpers.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

struct Case {
  Shape shape;
  Options options;
};

// A pruned product over the shapes that hit tails: N in {1, 7, 113}, N_q != N_kv, tiles that do
// not divide N, Br = Bc = 1, causal (including N_q > N_kv, which has fully masked rows).
std::vector<Case> fp64_cases() {
  std::vector<Case> cases;
  const int tiles[][2] = {{1, 1}, {4, 3}, {16, 32}, {64, 64}, {113, 5}};
  int k = 0;
  for (int n_q : {1, 7, 113})
    for (int n_kv : {1, 7, 113})
      for (int d : {1, 5, 16})
        for (bool causal : {false, true}) {
          Case c;
          c.shape = Shape{1 + k % 2, 1 + (k / 2) % 2, n_q, n_kv, d};
          c.options.causal = causal;
          c.options.block_r = tiles[k % 5][0];
          c.options.block_c = tiles[(k / 5) % 5][1];
          c.options.scale_placement = k % 7 == 3 ? ScalePlacement::query : ScalePlacement::scores;
          cases.push_back(c);
          ++k;
        }
  return cases;
}

}  // namespace

TEST_CASE("fp64 flash1 and flash2 equal the golden to 1e-12 relative", "[attention][golden]") {
  std::size_t compared = 0, compared_lse = 0;
  std::uint64_t seed = 100;
  for (const Case& c : fp64_cases()) {
    ++seed;
    INFO(describe(c.shape, c.options) << " seed=" << seed);
    const Inputs in = random_inputs(c.shape, seed, nx::Format::fp64);
    const Output g = golden(in, c.options);
    const double scale = std::max(max_abs(g.o), std::numeric_limits<double>::min());
    REQUIRE(max_abs(g.o) > 0.0);  // else the bound below is the smallest double: vacuous
    for (Algorithm a : {Algorithm::flash1, Algorithm::flash2}) {
      INFO(algorithm_name(a));
      const Output r = run(a, nx::kGoldenPolicy, in, c.options);
      CHECK(max_abs_diff(r.o, g.o) <= 1e-12 * scale);
      for (std::size_t i = 0; i < g.lse.size(); ++i) {
        if (std::isinf(g.lse[i])) {
          CHECK(r.lse[i] == g.lse[i]);
        } else {
          CHECK(std::fabs(r.lse[i] - g.lse[i]) <= 1e-12 * std::max(1.0, std::fabs(g.lse[i])));
          ++compared_lse;  // a row that sees keys
        }
      }
      compared += r.o.data.size() == g.o.data.size();
    }
  }
  CHECK(compared == 2 * fp64_cases().size());
  CHECK(compared_lse > 0);
}

// Uniform policies (every stage in one format): more mantissa bits, less deviation.
TEST_CASE("deviation falls from bf16 to fp16 to fp32 to fp64", "[attention][golden]") {
  const Shape s{1, 2, 96, 96, 32};
  const std::uint64_t seed = 2024;
  INFO("seed=" << seed);
  // Inputs exactly representable in bf16 (hence in every format here), so every policy and the
  // golden see the same values and only the arithmetic differs.
  const Inputs in = random_inputs(s, seed, nx::Format::bf16);
  Options opt;
  opt.block_r = 16;
  opt.block_c = 16;
  opt.causal = true;
  const Output g = golden(in, opt);
  for (Algorithm a : kAllAlgorithms) {
    std::vector<double> err;
    for (nx::Format f : {nx::Format::bf16, nx::Format::fp16, nx::Format::fp32, nx::Format::fp64}) {
      const nx::PrecisionPolicy pol = nx::detail::uniform_policy(f);
      err.push_back(max_abs_diff(run(a, pol, in, opt).o, g.o));
    }
    INFO(algorithm_name(a) << " bf16=" << err[0] << " fp16=" << err[1] << " fp32=" << err[2]
                           << " fp64=" << err[3]);
    CHECK(err[0] > err[1]);
    CHECK(err[1] > err[2]);
    CHECK(err[2] > err[3]);
    CHECK(err[3] <= 1e-12 * max_abs(g.o));
  }
}

// FlashAttention's test rule: error(flash) <= 2 x error(same-dtype framework math) + a floor.
// The floor is what rounding the output once costs each side: u(output format) * max|golden|,
// twice, derived from the format's traits (never typed in).
TEST_CASE("flash2 kernel-bf16 is within 2x of the bf16 framework baseline", "[attention][golden]") {
  const nx::PrecisionPolicy kernel = preset("kernel-bf16");
  const nx::PrecisionPolicy framework = preset("torch-math-bf16");
  std::size_t compared = 0;
  for (int n : {64, 200, 333}) {
    for (bool causal : {false, true}) {
      const Shape s{1, 2, n, n, 64};
      const std::uint64_t seed = 500 + n + causal;
      INFO("N=" << n << " causal=" << causal << " seed=" << seed);
      const Inputs in = random_inputs(s, seed, nx::Format::bf16);
      Options opt;
      opt.causal = causal;
      opt.block_r = 64;
      opt.block_c = 32;
      const Output g = golden(in, opt);
      const double flash = max_abs_diff(run(Algorithm::flash2, kernel, in, opt).o, g.o);
      const double base = max_abs_diff(run(Algorithm::baseline, framework, in, opt).o, g.o);
      const double floor = 2.0 * nx::traits(kernel.output).unit_roundoff() * max_abs(g.o);
      INFO("flash2 err=" << flash << " baseline err=" << base << " floor=" << floor);
      CHECK(base > 0.0);  // the comparison is not vacuous
      CHECK(flash <= 2.0 * base + floor);
      compared += base > 0.0;
    }
  }
  CHECK(compared == 6);
}
