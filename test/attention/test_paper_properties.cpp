// Properties of the arithmetic behind the two reproduced papers (docs/reproduction.md), checked on
// small problems with fixed, logged seeds. None of these compares against a published number:
// each states a direction the rounding model must produce, and can fail if the model is wrong.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "attention/helpers.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

double mean_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.data.size() == b.data.size());
  REQUIRE(!a.data.empty());
  double s = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) s += std::fabs(a.data[i] - b.data[i]);
  return s / static_cast<double>(a.data.size());
}

}  // namespace

// Golden et al. Fig. 3-4: deviation shrinks with more mantissa bits. The same inputs (exact in
// bf16, hence in every format) go through flash2 under the FA-2 kernel policy of each format and
// baseline under the framework math path of each format.
TEST_CASE("deviation falls as mantissa bits grow, and fp64 is at round-off", "[paper][formats]") {
  const std::vector<std::uint64_t> seeds = {101, 102, 103};
  const Shape s{1, 2, 192, 192, 64};
  const nx::Format formats[] = {nx::Format::bf16, nx::Format::fp16, nx::Format::fp32};
  for (Algorithm a : {Algorithm::flash2, Algorithm::baseline}) {
    std::vector<double> err(4, 0.0);
    double golden_scale = 0;
    for (std::uint64_t seed : seeds) {
      const Inputs in = random_inputs(s, seed, nx::Format::bf16);
      Options opt;
      opt.block_r = 64;
      opt.block_c = 32;
      const Output g = golden(in, opt);
      golden_scale = std::max(golden_scale, max_abs(g.o));
      for (int f = 0; f < 3; ++f) {
        const nx::PrecisionPolicy pol = a == Algorithm::flash2
                                            ? nx::detail::kernel_policy(formats[f])
                                            : nx::detail::torch_math_policy(formats[f]);
        err[static_cast<std::size_t>(f)] +=
            mean_abs_diff(run(a, pol, in, opt).o, g.o) / seeds.size();
      }
      err[3] += mean_abs_diff(run(a, nx::kGoldenPolicy, in, opt).o, g.o) / seeds.size();
    }
    INFO(algorithm_name(a) << " seeds 101-103 mean |dev|: bf16=" << err[0] << " fp16=" << err[1]
                           << " fp32=" << err[2] << " fp64=" << err[3]);
    CHECK(err[2] > 0);             // fp32 rounding really happened
    CHECK(err[0] > 2 * err[1]);    // 7 vs 10 fraction bits: 8x finer grid
    CHECK(err[1] > 16 * err[2]);   // 10 vs 23
    CHECK(err[2] > 1e6 * err[3]);  // 23 vs 52
    CHECK(err[3] <= 64 * 0x1p-53 * golden_scale);
  }
}

// Golden et al.'s mechanism for Flash's extra deviation at bf16: an algorithm that stores O in
// bf16 between K/V blocks (flash1 under an fp32 policy whose output stage is bf16) rounds O once
// per block, so its deviation grows with the number of K/V blocks N/Bc.
TEST_CASE("O stored in bf16 between K/V blocks: deviation grows with the block count",
          "[paper][tiles]") {
  const std::vector<std::uint64_t> seeds = {201, 202, 203};
  const Shape s{1, 2, 128, 128, 32};
  nx::PrecisionPolicy pol = nx::detail::uniform_policy(nx::Format::fp32);
  pol.output = nx::Format::bf16;
  const int block_cs[] = {128, 32, 8, 2};  // 1, 4, 16, 64 K/V blocks
  std::vector<double> err(4, 0.0);
  for (std::uint64_t seed : seeds) {
    const Inputs in = random_inputs(s, seed, nx::Format::bf16);
    Options opt;
    opt.block_r = 16;
    const Output g = golden(in, opt);
    for (int b = 0; b < 4; ++b) {
      opt.block_c = block_cs[b];
      err[static_cast<std::size_t>(b)] +=
          mean_abs_diff(run(Algorithm::flash1, pol, in, opt).o, g.o) / seeds.size();
    }
  }
  INFO("seeds 201-203, flash1 fp32+bf16 O, mean |dev| at 1/4/16/64 K/V blocks: "
       << err[0] << " " << err[1] << " " << err[2] << " " << err[3]);
  CHECK(err[0] > 0);
  CHECK(err[1] > 1.2 * err[0]);
  CHECK(err[2] > 1.2 * err[1]);
  CHECK(err[3] > 1.2 * err[2]);
  // flash2 keeps O in fp32 between blocks: its deviation must not follow the block count.
  std::vector<double> f2(2, 0.0);
  for (std::uint64_t seed : seeds) {
    const Inputs in = random_inputs(s, seed, nx::Format::bf16);
    Options opt;
    opt.block_r = 16;
    const Output g = golden(in, opt);
    opt.block_c = 128;
    f2[0] += mean_abs_diff(run(Algorithm::flash2, pol, in, opt).o, g.o) / seeds.size();
    opt.block_c = 2;
    f2[1] += mean_abs_diff(run(Algorithm::flash2, pol, in, opt).o, g.o) / seeds.size();
  }
  INFO("flash2 same policy, 1 vs 64 blocks: " << f2[0] << " " << f2[1]);
  CHECK(f2[1] < 1.2 * f2[0]);
  CHECK(err[3] > 2 * f2[1]);
}

// FA-3 Table 3's ablation: per-block scales do not lose to one scale per tensor on inputs with
// outliers (a block's scale is set by its own amax, never by a bigger one elsewhere). Once Q and K
// are rotated, the outliers are spread and block quantization barely matters: FA-3 reports
// 9.1e-3 vs 9.3e-3, docs/reproduction.md 8.15e-3 vs 8.17e-3, and over 16 seeds of this test
// either order wins about half the time (block+hadamard <= per-tensor+hadamard in 7 of 16, means
// 0.01269 vs 0.01256). So the rotated pair is held to "not worse by more than 5%", not to an
// order that is decided by the seed.
TEST_CASE("block-quantized fp8 is not worse than per-tensor fp8 on outlier inputs",
          "[paper][fp8]") {
  const std::vector<std::uint64_t> seeds = {301, 302, 303, 304};
  const Shape s{1, 2, 256, 256, 64};
  nx::PrecisionPolicy pol = preset("fp8-e4m3");
  pol.input = nx::Format::fp16;
  double block = 0, tensor = 0, block_rot = 0, tensor_rot = 0;
  for (std::uint64_t seed : seeds) {
    const Inputs in = outlier_inputs(s, seed, nx::Format::fp16);
    Options opt;
    opt.block_r = 64;
    opt.block_c = 64;
    const Output g = golden(in, opt);
    opt.fp8.incoherent_processing = false;
    block += rmse(run(Algorithm::flash3_fp8, pol, in, opt).o, g.o) / seeds.size();
    opt.fp8.block_quantization = false;
    tensor += rmse(run(Algorithm::flash3_fp8, pol, in, opt).o, g.o) / seeds.size();
    opt.fp8.incoherent_processing = true;
    tensor_rot += rmse(run(Algorithm::flash3_fp8, pol, in, opt).o, g.o) / seeds.size();
    opt.fp8.block_quantization = true;
    block_rot += rmse(run(Algorithm::flash3_fp8, pol, in, opt).o, g.o) / seeds.size();
  }
  INFO("seeds 301-304 mean rmse: block=" << block << " per-tensor=" << tensor << " block+hadamard="
                                         << block_rot << " per-tensor+hadamard=" << tensor_rot);
  CHECK(block > 0);
  CHECK(block <= tensor);
  CHECK(block_rot <= 1.05 * tensor_rot);
}
