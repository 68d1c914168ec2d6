// Host-only: the run-level cuda backend's kernel bodies, run for every thread of their launch by
// the host launch shim (host_launch.hpp), against the CPU path bit for bit:
//   * the input kernel (lib/cuda/inputs_kernel.cuh) == inputs::make_inputs, every distribution
//     and input format;
//   * the twins (lib/cuda/faithful_flash.cuh: row_body<A>) == attention::run, every algorithm the
//     device runs x every preset (and unfused variants), odd N, N_q != N_kv both ways, causal,
//     tiles that do not divide N, both scale placements;
//   * the device golden (the streamed baseline under the fp64 policy) == attention::golden.
// What this cannot see is the device compiler (--fmad=false), libdevice and the launch itself:
// the GPU test and scripts/gpu-check.sh's groups run them on a device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "attention/fp8_attention.hpp"
#include "attention/problem.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/faithful_flash.cuh"
#include "cuda/host_launch.hpp"
#include "cuda/inputs_kernel.cuh"
#include "cuda_check/checks.hpp"
#include "inputs/random_inputs.hpp"
#include "test_scale.hpp"

using namespace attndev;
using attention::Algorithm;
using inputs::Distribution;

namespace {

// Q, K, V as the input kernel draws them, on the host: every thread of the launch.
attention::Inputs inputs_by_kernel(const attention::Shape& s, const Distribution& dist,
                                   std::uint64_t seed, numerics::Format format) {
  attention::Inputs in;
  in.q = attention::Tensor(s.batch, s.heads, s.seq_q, s.head_dim);   // (B, H, N_q, d)
  in.k = attention::Tensor(s.batch, s.heads, s.seq_kv, s.head_dim);  // (B, H, N_kv, d)
  in.v = attention::Tensor(s.batch, s.heads, s.seq_kv, s.head_dim);  // (B, H, N_kv, d)
  cuda::device_inputs::Params p;
  p.dist = dist.params();
  p.seed = seed;
  p.format = format;
  p.batch = s.batch;
  p.heads = s.heads;
  p.seq_q = s.seq_q;
  p.seq_kv = s.seq_kv;
  p.head_dim = s.head_dim;
  p.q = in.q.data.data();
  p.k = in.k.data.data();
  p.v = in.v.data.data();
  cuda::tests::host_launch_1d(
      p.count(), cuda::device_inputs::kThreads,
      [&](const cuda::ThreadIndex& t) { cuda::device_inputs::element(p, t); });
  return in;
}

// Thread t of the twin kernel of `algorithm` (the launcher's template argument, at run time).
void row_body(Algorithm algorithm, const cuda::faithful::Params& p, const cuda::ThreadIndex& t) {
  namespace f = cuda::faithful;
  switch (algorithm) {
    case Algorithm::baseline:
      return f::row_body<Algorithm::baseline>(p, t);
    case Algorithm::flash1:
      return f::row_body<Algorithm::flash1>(p, t);
    case Algorithm::flash2:
      return f::row_body<Algorithm::flash2>(p, t);
    case Algorithm::flash3_fp8:
      return f::row_body<Algorithm::flash3_fp8>(p, t);
    case Algorithm::flash3_fp8_per_tensor:
      return f::row_body<Algorithm::flash3_fp8_per_tensor>(p, t);
    case Algorithm::flash3_fp8_no_hadamard:
      return f::row_body<Algorithm::flash3_fp8_no_hadamard>(p, t);
    case Algorithm::baseline_fp8:
      return f::row_body<Algorithm::baseline_fp8>(p, t);
    default:  // the twins of the CUDA kernels: select_twin refuses them (the test below)
      throw std::logic_error("no twin kernel for this algorithm");
  }
}

// The twin kernel's launch on the host: the launcher's input stage (for the fp8 algorithms the
// host's prepare_fp8, as cuda_backend.cpp runs it) and scratch, then the body for every thread.
attention::Output twin_by_kernel(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                                 const attention::Inputs& in, const attention::Options& options) {
  const attention::Problem staged = attention::make_problem(policy, in, options);
  const attention::Shape s = staged.shape;
  attention::Output out;
  out.o = attention::Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  cuda::faithful::Params p{};
  p.rows = staged.row_params();
  std::vector<double> scratch(std::max<std::size_t>(
      1, out.lse.size() *
             static_cast<std::size_t>(cuda::faithful::scratch_per_row(algorithm, p.rows))));
  std::vector<int> counts(out.lse.size());
  p.q = staged.q.data.data();
  p.k = staged.k.data.data();
  p.v = staged.v.data.data();
  attention::detail::Fp8Problem fp8;
  if (attention::is_fp8_algorithm(algorithm)) {
    attention::detail::require_fp8_policy(algorithm, policy);
    fp8 = attention::detail::prepare_fp8(algorithm, staged, options.fp8);
    p.q = fp8.q.values.data.data();
    p.k = fp8.k.values.data.data();
    p.v = fp8.v.values.data.data();
    p.q_scale = fp8.q.view();
    p.k_scale = fp8.k.view();
    p.v_scale = fp8.v.view();
  }
  p.o = out.o.data.data();
  p.lse = out.lse.data();
  p.scratch = scratch.data();
  p.counts = counts.data();
  p.batch = s.batch;
  p.heads = s.heads;
  cuda::tests::host_launch_1d(cuda::faithful::row_count(p), cuda::faithful::kThreadsPerBlock,
                              [&](const cuda::ThreadIndex& t) { row_body(algorithm, p, t); });
  return out;
}

using cuda_check::TwinCase;

std::string case_text(const TwinCase& c, const std::string& policy, Algorithm a) {
  return std::string(attention::algorithm_name(a)) + " " + policy + " | " + c.name;
}

}  // namespace

TEST_CASE("the input kernel draws make_inputs' values bit for bit", "[cuda][inputs]") {
  const std::vector<Distribution> dists = cuda_check::input_distributions();
  const attention::Shape shape{2, 3, 37, 19, 13};  // odd everything: the index arithmetic
  std::size_t compared = 0;
  std::uint64_t seed = 41;
  for (const Distribution& d : dists)
    for (numerics::Format f : cuda_check::kInputFormats) {
      INFO(d.describe() << " " << numerics::format_name(f) << " seed " << seed);
      const attention::Inputs cpu = inputs::make_inputs(shape, d, seed, f);
      const attention::Inputs dev = inputs_by_kernel(shape, d, seed, f);
      CHECK(cuda_check::compare_bits(cpu.q.data, dev.q.data).mismatches == 0);
      CHECK(cuda_check::compare_bits(cpu.k.data, dev.k.data).mismatches == 0);
      CHECK(cuda_check::compare_bits(cpu.v.data, dev.v.data).mismatches == 0);
      compared += cpu.q.data.size() + 2 * cpu.k.data.size();
      ++seed;
    }
  CHECK(compared ==
        dists.size() * std::size(cuda_check::kInputFormats) * (2 * 3 * (37 + 2 * 19) * 13));
}

TEST_CASE("the input kernel comparison can fail", "[cuda][inputs]") {
  const attention::Shape shape{1, 1, 9, 9, 8};
  const Distribution d = Distribution::normal(0.0, 1.0);
  const attention::Inputs cpu = inputs::make_inputs(shape, d, 5, numerics::Format::fp32);
  CHECK(cuda_check::compare_bits(cpu.q.data,
                                 inputs_by_kernel(shape, d, 6, numerics::Format::fp32).q.data)
            .mismatches > 0);
  // Q, K and V are distinct streams: a kernel that wrote K into V would be caught.
  CHECK(cuda_check::compare_bits(cpu.k.data, cpu.v.data).mismatches > 0);
}

TEST_CASE("twins on the device path equal attention::run bit for bit, every preset", "[cuda]") {
  const Algorithm algorithms[] = {Algorithm::baseline, Algorithm::flash1, Algorithm::flash2};
  std::size_t runs = 0, elements = 0;
  std::uint64_t seed = 1000;
  for (const cuda_check::NamedPolicy& named : cuda_check::twin_policies()) {
    const numerics::PrecisionPolicy& policy = named.policy;
    for (const TwinCase& c : cuda_check::twin_cases())
      for (Algorithm a : algorithms) {
        INFO(case_text(c, named.name, a) << " seed " << seed);
        REQUIRE(cuda::check_twin_supported(a, policy, c.shape, c.options()).supported);
        const attention::Inputs in = inputs::make_inputs(c.shape, c.dist, seed++, policy.input);
        const attention::Output cpu = attention::run(a, policy, in, c.options());
        const attention::Output dev = twin_by_kernel(a, policy, in, c.options());
        const auto cmp = cuda_check::compare_bits(cpu.o.data, dev.o.data);
        INFO("mismatches " << cmp.mismatches << "; first at " << cmp.first_mismatch << ": cpu "
                           << cmp.reference_value << " device path " << cmp.output_value);
        CHECK(cmp.compared == cpu.o.data.size());
        CHECK(cmp.mismatches == 0);
        // On the host both take log() from one libm: lse agrees bit for bit here.
        CHECK(cuda_check::compare_bits(cpu.lse, dev.lse).mismatches == 0);
        elements += cmp.compared;
        ++runs;
      }
  }
  std::printf("device-path twins: %zu runs, %zu elements compared bit for bit\n", runs, elements);
  CHECK(runs >= std::size(numerics::kPolicyPresets) * cuda_check::twin_cases().size() * 3);
}

TEST_CASE("twins on the device path equal attention::run on random faithful cases", "[cuda]") {
  // The GPU sweep's random product (odd head dims, tiles of 1, fully masked rows), each case's
  // policy run by all three algorithms.
  const auto cases = cuda_check::faithful_cases(
      /*seed=*/77, static_cast<int>(test::scaled_count(300, /*floor=*/12)));
  std::size_t compared = 0;
  for (const auto& c : cases)
    for (Algorithm a : {Algorithm::baseline, Algorithm::flash1, Algorithm::flash2}) {
      INFO(c.name << " as " << attention::algorithm_name(a));
      const attention::Inputs in = cuda_check::random_inputs(c.shape, c.seed, c.policy.input);
      const attention::Output cpu = attention::run(a, c.policy, in, c.options);
      const attention::Output dev = twin_by_kernel(a, c.policy, in, c.options);
      CHECK(cuda_check::compare_bits(cpu.o.data, dev.o.data).mismatches == 0);
      compared += cpu.o.data.size();
    }
  CHECK(compared > 0);
}

TEST_CASE("the streamed baseline comparison can fail", "[cuda]") {
  const TwinCase& c = cuda_check::twin_cases()[0];
  numerics::PrecisionPolicy policy = numerics::find_preset("torch-math-bf16")->policy;
  const attention::Inputs in = inputs::make_inputs(c.shape, c.dist, 3, policy.input);
  const attention::Output cpu = attention::run(Algorithm::baseline, policy, in, c.options());
  policy.prob = numerics::Format::fp32;  // P no longer stored in bf16
  const attention::Output dev = twin_by_kernel(Algorithm::baseline, policy, in, c.options());
  CHECK(cuda_check::compare_bits(cpu.o.data, dev.o.data).mismatches > 0);
}

TEST_CASE("the device golden equals the CPU golden", "[cuda][golden]") {
  // The bar is 1e-12 relative; the streamed baseline does the CPU golden's operations in
  // its order, so it is met with every bit equal (the comparison below says so for O and lse).
  struct GoldenCase {
    attention::Shape shape;
    bool causal;
    Distribution dist;
  };
  const GoldenCase golden_cases[] = {
      {{1, 2, 301, 301, 64}, true, Distribution::normal(0.0, 1.0)},
      {{2, 1, 200, 517, 128}, false, Distribution::uniform(0.0, 1.0)},
      {{1, 1, 517, 200, 33}, true, Distribution{Distribution::Kind::outlier, 0, 1, 10, 0.01}},
  };
  std::uint64_t seed = 9;
  for (const GoldenCase& g : golden_cases) {
    attention::Options o;
    o.causal = g.causal;
    for (numerics::Format f : {numerics::Format::bf16, numerics::Format::fp32}) {
      // The golden computes in fp64 whatever the input format, which changes the values only:
      // the smoke scale (sanitizer and clang builds) runs bf16 inputs alone.
      if (test::kSmokeScale && f == numerics::Format::fp32) continue;
      INFO("N_q " << g.shape.seq_q << " N_kv " << g.shape.seq_kv << " d " << g.shape.head_dim << " "
                  << g.dist.describe() << " " << numerics::format_name(f) << " seed " << seed);
      const attention::Inputs in = inputs::make_inputs(g.shape, g.dist, seed++, f);
      const attention::Output cpu = attention::golden(in, o);
      const attention::Output dev =
          twin_by_kernel(Algorithm::baseline, numerics::kGoldenPolicy, in, o);
      double max_diff = 0, scale = 0;
      for (std::size_t i = 0; i < cpu.o.data.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(cpu.o.data[i] - dev.o.data[i]));
        scale = std::max(scale, std::fabs(cpu.o.data[i]));
      }
      REQUIRE(scale > 0);
      CHECK(max_diff / scale <= 1e-12);
      CHECK(cuda_check::compare_bits(cpu.o.data, dev.o.data).mismatches == 0);
      CHECK(cuda_check::compare_bits(cpu.lse, dev.lse).mismatches == 0);
    }
  }
}

TEST_CASE("fp8 twins on the device path equal attention::run bit for bit", "[cuda][fp8]") {
  // The fp8 algorithms quantize on the host (prepare_fp8, shared) and run their rows with the
  // Fp8Dequant hook on the device. Powers of two for d (the Hadamard rotation needs one); odd N,
  // N_q != N_kv both ways, causal, tiles that do not divide N, outliers (the scales' job).
  struct Fp8Case {
    const char* name;
    attention::Shape shape;
    int block_r, block_c;
    bool causal;
    Distribution dist;
  };
  const Fp8Case cases[] = {
      {"odd N, causal, Bc not dividing N",
       {1, 2, 75, 75, 16},
       16,
       32,
       true,
       Distribution{Distribution::Kind::outlier, 0, 1, 10.0, 0.01}},
      {"N_q > N_kv causal: fully masked rows",
       {2, 1, 113, 40, 8},
       5,
       7,
       true,
       Distribution::normal(0.0, 1.0)},
      {"N_q < N_kv, d 64", {1, 1, 33, 130, 64}, 64, 48, false, Distribution::uniform(-2.0, 1.0)},
  };
  numerics::PrecisionPolicy e4m3_fp16 = numerics::find_preset("fp8-e4m3")->policy;
  e4m3_fp16.input = numerics::Format::fp16;  // FA-3's inputs before quantization
  numerics::PrecisionPolicy e4m3_bf16 = e4m3_fp16;
  e4m3_bf16.input = numerics::Format::bf16;
  numerics::PrecisionPolicy unfused = e4m3_fp16;
  unfused.fma = false;
  numerics::PrecisionPolicy table3 = e4m3_fp16;  // configs/paper/fa3-table3.json's baseline
  table3.score = table3.stats = table3.prob = numerics::Format::fp16;
  const std::pair<const char*, numerics::PrecisionPolicy> policies[] = {
      {"fp8-e4m3 fp16 inputs", e4m3_fp16},
      {"fp8-e4m3 bf16 inputs", e4m3_bf16},
      {"fp8-e4m3 unfused", unfused},
      {"softmax in fp16", table3},
      {"kernel-bf16", numerics::find_preset("kernel-bf16")->policy}};
  std::size_t runs = 0;
  std::uint64_t seed = 500;
  for (const auto& [policy_name, policy] : policies)
    for (const Fp8Case& c : cases)
      for (Algorithm a : attention::kFp8Algorithms) {
        attention::Options o;
        o.block_r = c.block_r;
        o.block_c = c.block_c;
        o.causal = c.causal;
        INFO(attention::algorithm_name(a)
             << " " << policy_name << " | " << c.name << " seed " << seed);
        const attention::Inputs in = inputs::make_inputs(c.shape, c.dist, seed++, policy.input);
        const attention::Output cpu = attention::run(a, policy, in, o);
        const attention::Output dev = twin_by_kernel(a, policy, in, o);
        const auto cmp = cuda_check::compare_bits(cpu.o.data, dev.o.data);
        INFO("mismatches " << cmp.mismatches << "; first at " << cmp.first_mismatch);
        CHECK(cmp.compared == cpu.o.data.size());
        CHECK(cmp.mismatches == 0);
        CHECK(cuda_check::compare_bits(cpu.lse, dev.lse).mismatches == 0);
        ++runs;
      }
  CHECK(runs == std::size(policies) * std::size(cases) * std::size(attention::kFp8Algorithms));
  // The CPU's refusals are the twin's: an fp8 input format, a framework policy, an odd d.
  const attention::Inputs in =
      inputs::make_inputs({1, 1, 8, 8, 12}, Distribution::normal(0, 1), 1, numerics::Format::fp16);
  CHECK_THROWS_AS(twin_by_kernel(Algorithm::flash3_fp8, e4m3_fp16, in, {}), std::invalid_argument);
  CHECK_THROWS_AS(twin_by_kernel(Algorithm::baseline_fp8,
                                 numerics::find_preset("framework-bf16")->policy, in, {}),
                  std::invalid_argument);
}

TEST_CASE("select_twin runs the emulator's algorithms and refuses what is host code, with a reason",
          "[cuda]") {
  // Every algorithm of the emulator's own (baseline, flash1, flash2, the fp8 ones) under every
  // preset; the twins of the CUDA kernels, the quantized recipes and the tensor-core profiles are
  // refused, saying how to run them on the CPU. The visitor runs exactly when the answer is yes.
  const attention::Shape shape{1, 1, 64, 64, 64};
  int supported = 0, refused = 0;
  for (const numerics::PolicyPreset& preset : numerics::kPolicyPresets)
    for (numerics::mma::Arch arch : {numerics::mma::Arch::none, numerics::mma::Arch::sm90})
      for (Algorithm a : attention::kEveryAlgorithm) {
        numerics::PrecisionPolicy policy = preset.policy;
        policy.mma = arch;
        INFO(attention::algorithm_name(a)
             << " " << preset.name << " mma " << static_cast<int>(arch));
        int visits = 0;
        const cuda::Selection sel =
            cuda::select_twin(a, policy, shape, {}, [&](auto) { ++visits; });
        const bool expected = !attention::is_twin_algorithm(a) &&
                              !attention::is_quant_algorithm(a) &&
                              arch == numerics::mma::Arch::none;
        CHECK(sel.supported == expected);
        CHECK(visits == (sel.supported ? 1 : 0));
        if (!sel.supported) {
          CHECK_THAT(sel.reason, Catch::Contains("on the cuda backend"));
          CHECK_THAT(sel.reason, Catch::Contains("--backend cpu"));
        }
        (sel.supported ? supported : refused) += 1;
      }
  CHECK(supported > 0);
  CHECK(refused > 0);
}
