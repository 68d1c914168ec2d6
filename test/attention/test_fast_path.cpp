// The fast (SIMD) paths must be bit-identical to the generic path through numerics' *_in
// functions, on many random shapes, tiles and policies (including fma off and custom storage
// formats). A case where the fast path is not taken compares nothing and is counted apart.
#include <cstring>
#include <random>
#include <string>

#include "attention/kernels.hpp"
#include "helpers.hpp"
#include "test_scale.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

struct NamedPolicy {
  std::string name;
  nx::PrecisionPolicy policy;
};

std::vector<NamedPolicy> fast_policies() {
  std::vector<NamedPolicy> out;
  for (const char* n : {"kernel-bf16", "kernel-fp16", "torch-math-bf16", "torch-math-fp16",
                        "working-bf16", "working-fp16", "fp32", "fp64", "fp8-e4m3",
                        "framework-bf16", "framework-fp16", "framework-fp32", "framework-fp64"})
    out.push_back({n, preset(n)});
  nx::PrecisionPolicy p = preset("kernel-bf16");
  p.fma = false;
  out.push_back({"kernel-bf16+fma=false", p});
  p = preset("fp64");
  p.fma = false;
  out.push_back({"fp64+fma=false", p});
  p = preset("kernel-fp16");
  p.score = nx::Format::tf32;
  p.prob = nx::Format::bf16;
  p.output = nx::Format::fp32;
  out.push_back({"kernel-fp16+score=tf32+prob=bf16+output=fp32", p});
  // Narrow statistics: every stats operation exact-then-rounded (numerics/static_arith.hpp).
  p = preset("working-bf16");
  p.fma = false;
  out.push_back({"working-bf16+fma=false", p});
  p = preset("kernel-fp16");
  p.stats = nx::Format::tf32;
  out.push_back({"kernel-fp16+stats=tf32", p});
  p = preset("kernel-bf16");
  p.stats = nx::Format::fp16;  // statistics far narrower in range than the scores
  p.score = nx::Format::fp32;
  out.push_back({"kernel-bf16+stats=fp16+score=fp32", p});
  p = preset("working-fp16");
  p.score = nx::Format::fp32;  // fp32 operands in fp16 arithmetic: the sticky term decides ties
  p.prob = nx::Format::fp32;
  out.push_back({"working-fp16+score=fp32+prob=fp32", p});
  // fp64 arithmetic with one narrower stage (configs/analysis/attribution.json): the double path.
  for (nx::Stage st :
       {nx::Stage::input, nx::Stage::score, nx::Stage::stats, nx::Stage::prob, nx::Stage::output}) {
    p = preset("fp64");
    p.at(st) = st == nx::Stage::stats ? nx::Format::fp16 : nx::Format::bf16;
    out.push_back({std::string("fp64+") + nx::stage_name(st) + "=narrow", p});
  }
  p = preset("fp64");
  p.stats = nx::Format::bf16;
  p.prob = nx::Format::fp8_e4m3;
  p.fma = false;
  out.push_back({"fp64+stats=bf16+prob=e4m3+fma=false", p});
  // The framework model: fp32 ops, every output stored in its stage's format.
  p = preset("framework-bf16");
  p.fma = false;
  out.push_back({"framework-bf16+fma=false", p});
  p = preset("framework-fp16");
  p.stats = nx::Format::bf16;
  p.score_accum = nx::Format::fp32;
  p.prob = nx::Format::fp8_e4m3;
  out.push_back({"framework-fp16+stats=bf16+score_accum=fp32+prob=e4m3", p});
  // fp8 storage: e5m2 scores (overflow to inf), e4m3 P and output with NaN on overflow.
  p = preset("fp8-e4m3");
  p.score = nx::Format::fp8_e5m2;
  p.output = nx::Format::fp8_e4m3;
  p.fp8_overflow = nx::Overflow::to_nan;
  out.push_back({"fp8-e4m3+score=e5m2+output=e4m3+overflow=nan", p});
  return out;
}

}  // namespace

TEST_CASE("fast paths are bit-identical to the generic path", "[attention][fast]") {
  const std::uint64_t seed = 777;
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int> xs) {
    return *(xs.begin() + static_cast<long>(rng() % xs.size()));
  };
  std::size_t compared = 0;
  const std::vector<NamedPolicy> policies = fast_policies();
  const int trials = static_cast<int>(attndev::test::scaled_count(200, 20));  // test_scale.hpp
  for (int trial = 0; trial < trials; ++trial) {
    const NamedPolicy& np = policies[static_cast<std::size_t>(trial) % policies.size()];
    Shape s;
    s.batch = pick({1, 2});
    s.heads = pick({1, 2});
    s.seq_q = pick({1, 2, 7, 16, 33, 113, 150});
    s.seq_kv = pick({1, 3, 7, 16, 31, 113, 150});
    s.head_dim = pick({1, 3, 8, 16, 17, 40, 64, 100});
    Options opt;
    opt.block_r = pick({1, 2, 5, 16, 64});
    opt.block_c = pick({1, 3, 16, 17, 32, 64, 128});
    opt.causal = rng() % 2 == 0;
    opt.scale_placement = rng() % 4 == 0 ? ScalePlacement::query : ScalePlacement::scores;
    const double stddev = pick({1, 4}) * 0.5;  // wider inputs sharpen the softmax
    INFO(np.name << " " << describe(s, opt) << " stddev=" << stddev << " seed=" << seed
                 << " trial=" << trial);
    const Inputs in = random_inputs(s, seed + trial, np.policy.input, stddev);
    for (Algorithm a : kAllAlgorithms) {
      const std::string path = kernel_path(a, np.policy, opt);
      if (path == "generic") continue;  // nothing to compare for this algorithm
      INFO(algorithm_name(a) << " " << path);
      Options generic = opt;
      generic.path = Options::Path::generic;
      const Output fast = run(a, np.policy, in, opt);
      const Output ref = run(a, np.policy, in, generic);
      CHECK(bit_differences(fast, ref) == 0);
      ++compared;
    }
  }
  INFO("compared " << compared);
  CHECK(compared >= static_cast<std::size_t>(trials));  // the fast paths ran, not skipped
}

TEST_CASE("the dispatcher takes the fast paths for the common policies", "[attention][fast]") {
  CHECK(std::string(kernel_path(Algorithm::flash2, preset("kernel-bf16"), Options{})) ==
        "fast-f32");
  CHECK(std::string(kernel_path(Algorithm::baseline, preset("torch-math-bf16"), Options{})) ==
        "fast-f32");
  CHECK(std::string(kernel_path(Algorithm::baseline, preset("fp64"), Options{})) == "fast-f64");
  CHECK(std::string(kernel_path(Algorithm::flash1, preset("kernel-bf16"), Options{})) ==
        "fast-f32");
  CHECK(std::string(kernel_path(Algorithm::flash1, preset("fp64"), Options{})) == "fast-f64");
  // bf16 statistics: exact-then-rounded operations on the float path.
  CHECK(std::string(kernel_path(Algorithm::flash2, preset("working-bf16"), Options{})) ==
        "fast-f32");
  CHECK(std::string(kernel_path(Algorithm::flash1, preset("working-fp16"), Options{})) ==
        "fast-f32");
  // The framework model: fp32 ops stored in each stage's format.
  for (Algorithm a : kAllAlgorithms)
    CHECK(std::string(kernel_path(a, preset("framework-bf16"), Options{})) == "fast-f32");
  CHECK(std::string(kernel_path(Algorithm::flash1, preset("framework-fp64"), Options{})) ==
        "fast-f64");
  nx::PrecisionPolicy fp64_bf16_score = preset("fp64");
  fp64_bf16_score.score = nx::Format::bf16;
  CHECK(std::string(kernel_path(Algorithm::flash1, fp64_bf16_score, Options{})) == "fast-f64");
  // A bf16 dot-product accumulator has no SIMD kernel: generic path.
  nx::PrecisionPolicy narrow_accum = preset("kernel-bf16");
  narrow_accum.score_accum = nx::Format::bf16;
  CHECK(std::string(kernel_path(Algorithm::flash2, narrow_accum, Options{})) == "generic");
  Options generic;
  generic.path = Options::Path::generic;
  CHECK(std::string(kernel_path(Algorithm::flash2, preset("kernel-bf16"), generic)) == "generic");
}

// The fp8 algorithms: the same quantized (and rotated) e4m3 operands through flash2's and
// baseline's row functions with the Fp8Dequant hook, fast against generic.
TEST_CASE("fp8 algorithms on the fast path are bit-identical to the generic path",
          "[attention][fast]") {
  const std::uint64_t seed = 4242;
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int> xs) {
    return *(xs.begin() + static_cast<long>(rng() % xs.size()));
  };
  std::vector<NamedPolicy> policies;
  for (nx::Format in : {nx::Format::fp16, nx::Format::bf16}) {
    nx::PrecisionPolicy p = preset("fp8-e4m3");
    p.input = in;
    policies.push_back({std::string("fp8-e4m3+input=") + nx::format_name(in), p});
  }
  nx::PrecisionPolicy p = preset("fp8-e4m3");
  p.input = nx::Format::fp16;
  p.score = p.stats = p.prob = nx::Format::fp16;  // FA-3 Table 3's fp8 baseline: softmax in fp16
  policies.push_back({"fp8-e4m3+input,score,stats,prob=fp16", p});
  p.fma = false;
  policies.push_back({"fp8-e4m3+input,score,stats,prob=fp16+fma=false", p});
  std::size_t compared = 0;
  const int trials = static_cast<int>(attndev::test::scaled_count(40, 8));  // test_scale.hpp
  for (int trial = 0; trial < trials; ++trial) {
    const NamedPolicy& np = policies[static_cast<std::size_t>(trial) % policies.size()];
    Shape s;
    s.batch = pick({1, 2});
    s.heads = pick({1, 2});
    s.seq_q = pick({1, 7, 33, 113, 150});
    s.seq_kv = pick({1, 7, 31, 113, 150});
    s.head_dim = pick({1, 8, 16, 64, 128});  // powers of two: the Hadamard rotation
    Options opt;
    opt.block_r = pick({1, 5, 16, 64});
    opt.block_c = pick({1, 3, 16, 17, 64, 128});
    opt.causal = rng() % 2 == 0;
    opt.scale_placement = rng() % 4 == 0 ? ScalePlacement::query : ScalePlacement::scores;
    opt.fp8.block_quantization = rng() % 4 != 0;
    opt.fp8.incoherent_processing = rng() % 4 != 0;
    INFO(np.name << " " << describe(s, opt) << " seed=" << seed << " trial=" << trial);
    const Inputs in = random_inputs(s, seed + trial, np.policy.input, pick({1, 4}) * 0.5);
    for (Algorithm a : kFp8Algorithms) {
      INFO(algorithm_name(a) << " " << kernel_path(a, np.policy, opt));
      REQUIRE(std::string(kernel_path(a, np.policy, opt)) == "fast-f32");
      Options generic = opt;
      generic.path = Options::Path::generic;
      CHECK(bit_differences(run(a, np.policy, in, opt), run(a, np.policy, in, generic)) == 0);
      ++compared;
    }
  }
  CHECK(compared == static_cast<std::size_t>(trials) * std::size(kFp8Algorithms));
}

// FloatRounder (the fast path's branch-free rounding with the format as data) against
// numerics::round_to on random bit patterns (every float class: subnormals, inf, NaN) and on
// the boundaries of each format, for every format and overflow rule.
TEST_CASE("the fast path's float rounder equals round_to for every format", "[attention][fast]") {
  std::mt19937_64 rng(0x5eedf10a7);
  std::vector<float> xs;
  for (int i = 0; i < 200000; ++i)
    xs.push_back(nx::float_from_bits(static_cast<std::uint32_t>(rng())));
  for (nx::Format f : nx::kAllFormats) {
    const nx::FormatTraits t = nx::traits(f);
    for (double base : {t.max_finite, t.min_normal(), t.min_subnormal(), 1.0})
      for (double k = -4; k <= 4; ++k) {
        xs.push_back(static_cast<float>(base + k * base * t.epsilon() / 4));
        xs.push_back(static_cast<float>(base + k * t.min_subnormal() / 2));
      }
  }
  const std::size_t n = xs.size();
  for (std::size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  for (nx::Format f : nx::kAllFormats) {
    if (f == nx::Format::fp64) continue;
    for (nx::Overflow o : {nx::Overflow::to_inf, nx::Overflow::to_nan, nx::Overflow::saturate}) {
      const nx::FloatRounder r(f, o);
      std::size_t mismatches = 0;
      float first = 0;
      for (float x : xs) {
        const float got = r(x);
        const float want = static_cast<float>(nx::round_to(f, static_cast<double>(x), o));
        const bool same = nx::bits_of(got) == nx::bits_of(want) || (got != got && want != want);
        if (!same && mismatches++ == 0) first = x;
      }
      INFO(nx::format_name(f) << " overflow " << static_cast<int>(o) << " first mismatch at "
                              << first);
      CHECK(mismatches == 0);
    }
  }
}
