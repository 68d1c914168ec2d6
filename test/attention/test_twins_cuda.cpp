// The twins of FlashAttention-2's and PyTorch's memory-efficient CUDA kernels
// (lib/attention/twins/): equal to an independent thread-level reference (twin_reference.hpp) on
// every shape here, each modelled step changes bits on these inputs, and the twin takes the
// kernel source's choice; the launch decisions (tiles, splits) against the launch code's tables.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "attention/problem.hpp"
#include "attention/twins/fa2_cuda.hpp"
#include "attention/twins/mem_efficient.hpp"
#include "helpers.hpp"
#include "test_scale.hpp"
#include "twin_reference.hpp"

namespace attndev::attention {
namespace {

using numerics::Format;
using testing::Fa2Choices;
using testing::MemEffChoices;
using testing::TwinRow;

// A GPU with one SM: FA-2 never splits the K/V sequence there.
constexpr twins::GpuProfile kNoSplitSm80{"test-sm80", "one SM", 1, false, true};
constexpr twins::GpuProfile kNoSplitSm89{"test-sm89", "one SM", 1, true, false};

struct TwinCase {
  const char* name;
  Shape shape;
  bool causal;
};

// Odd sizes reach the ragged last block (processed first by FA-2) and, with N_q != N_kv, rows
// that see few keys; d = 80 runs in the kHeadDim = 96 kernel.
const TwinCase kCases[] = {
    {"N=75 d=64", {1, 2, 75, 75, 64}, false},
    {"N=113 d=64 causal", {1, 1, 113, 113, 64}, true},
    {"N=200 d=128", {1, 1, 200, 200, 128}, false},
    {"N=200 d=128 causal", {1, 1, 200, 200, 128}, true},
    {"N_q=70 N_kv=150 d=80 causal", {2, 1, 70, 150, 80}, true},
    {"N_q=150 N_kv=70 d=32 causal", {1, 1, 150, 70, 32}, true},
};

numerics::PrecisionPolicy policy_with_output(Format in, Format out) {
  numerics::PrecisionPolicy p = testing::preset(in == Format::bf16 ? "kernel-bf16" : "kernel-fp16");
  p.output = out;
  return p;
}

Problem problem_for(const TwinCase& c, Format in, Format out, std::uint64_t seed) {
  Options o;
  o.causal = c.causal;
  o.threads = 2;
  return make_problem(policy_with_output(in, out), testing::random_inputs(c.shape, seed, in), o);
}

Output empty_output(const Shape& s) {
  Output out;
  out.o = Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  return out;
}

TwinRow row_of(const Problem& p, int b, int h, int i) {
  return {p.q.head_ptr(b, h) + static_cast<long>(i) * p.shape.head_dim,
          p.k.head_ptr(b, h),
          p.v.head_ptr(b, h),
          p.shape.head_dim,
          p.shape.seq_kv,
          rows::visible_count(i, p.shape.seq_q, p.shape.seq_kv, p.causal)};
}

float fa2_scale_log2(const Problem& p) {
  return static_cast<float>(static_cast<double>(static_cast<float>(p.scale)) * numerics::kLog2e);
}

// The reference over every row of a non-split FA-2 launch: O as the kernel stores it.
Tensor fa2_reference(const Problem& p, const twins::Fa2Plan& plan, const twins::MmaChain& mma,
                     const twins::Exp2& exp2, const Fa2Choices& ch) {
  const Shape& s = p.shape;
  Tensor o(s.batch, s.heads, s.seq_q, s.head_dim);
  const int n_blocks = (s.seq_kv + plan.block_n - 1) / plan.block_n;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.seq_q; ++i) {
        const int m_block = i / plan.block_m;
        int n_max = n_blocks;
        if (p.causal)
          n_max = std::min(n_max,
                           ((m_block + 1) * plan.block_m + s.seq_kv - s.seq_q + plan.block_n - 1) /
                               plan.block_n);
        Fa2Choices c = ch;
        c.check_inf = p.causal;
        const testing::Fa2RowResult r =
            testing::fa2_reference_row(row_of(p, b, h, i), plan.block_n, 0, std::max(n_max, 0),
                                       fa2_scale_log2(p), p.policy.prob, mma, exp2, c);
        for (int t = 0; t < s.head_dim; ++t)
          o.at(b, h, i, t) = numerics::round_to(p.policy.output, r.o[t]);
      }
  return o;
}

std::size_t differing(const Tensor& a, const Tensor& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) n += !testing::same_bits(a.data[i], b.data[i]);
  return n;
}

Tensor run_fa2_twin(const Problem& p, const twins::GpuProfile& gpu, const twins::Fa2Build& build,
                    const twins::MmaChain& mma, const twins::Exp2& exp2) {
  twins::TwinSetup setup;
  setup.mma = &mma;
  setup.exp2 = exp2;
  setup.gpu = gpu;
  Output out = empty_output(p.shape);
  twins::run_fa2(p, setup, build, out);
  return out.o;
}

}  // namespace

TEST_CASE("fa2-cuda twin equals an independent thread-level reference of the kernel",
          "[attention][twins]") {
  const twins::FmaChain fma;
  const twins::Exp2 exp2 = twins::project_exp2();
  for (const TwinCase& c : kCases)
    for (const twins::GpuProfile& gpu : {kNoSplitSm80, kNoSplitSm89})
      for (bool unfused : {false, true})
        for (Format in : {Format::bf16, Format::fp16}) {
          // fp16 rounds P to other values through the same code: the smoke scale (sanitizer and
          // clang builds) runs bf16 alone.
          if (attndev::test::kSmokeScale && in == Format::fp16) continue;
          CAPTURE(c.name, gpu.name, unfused, numerics::format_name(in));
          const Problem p = problem_for(c, in, in, 7);
          twins::Fa2Plan plan;
          REQUIRE(twins::fa2_plan(p.shape, p.causal, gpu, plan, nullptr));
          REQUIRE(plan.num_splits == 1);
          twins::Fa2Build build;
          build.unfused_exp2_arg = unfused;
          Fa2Choices ch;
          ch.ffma_exp2_arg = !unfused;
          const Tensor twin = run_fa2_twin(p, gpu, build, fma, exp2);
          CHECK(differing(twin, fa2_reference(p, plan, fma, exp2, ch)) == 0);
        }
}

TEST_CASE("fa2-cuda: each modelled step changes bits, and the twin takes the source's choice",
          "[attention][twins]") {
  // fp32 output shows every difference the fp32 arithmetic makes (the kernel casts to its element
  // type, which hides most of them); N = 300 gives three K/V blocks of 128, the last ragged.
  const TwinCase c{"N=300 d=64", {1, 2, 300, 300, 64}, false};
  const Problem p = problem_for(c, Format::bf16, Format::fp32, 11);
  const twins::FmaChain fma;
  const twins::Exp2 exp2 = twins::project_exp2();
  twins::Fa2Plan plan;
  REQUIRE(twins::fa2_plan(p.shape, false, kNoSplitSm80, plan, nullptr));
  const Tensor twin = run_fa2_twin(p, kNoSplitSm80, {}, fma, exp2);
  const Tensor source = fa2_reference(p, plan, fma, exp2, {});
  REQUIRE(differing(twin, source) == 0);
  struct Alternative {
    const char* what;
    Fa2Choices choices;
  };
  std::vector<Alternative> alternatives(5);
  alternatives[0] = {"K/V blocks in forward order", {}};
  alternatives[0].choices.reverse_blocks = false;
  alternatives[1] = {"exp2 argument as FMUL then FADD", {}};
  alternatives[1].choices.ffma_exp2_arg = false;
  alternatives[2] = {"one row sum in column order (no per-thread lanes)", {}};
  alternatives[2].choices.thread_lanes = false;
  alternatives[3] = {"quad all-reduce xor 1 first", {}};
  alternatives[3].choices.quad_xor2_first = false;
  alternatives[4] = {"row_sum rescale as FMUL then FADD", {}};
  alternatives[4].choices.fused_sum_rescale = false;
  for (const Alternative& a : alternatives) {
    CAPTURE(a.what);
    const std::size_t n = differing(twin, fa2_reference(p, plan, fma, exp2, a.choices));
    INFO(n << " of " << twin.data.size() << " elements differ");
    CHECK(n > 0);
  }
  // The same input through the kernel's own bf16 output still sees the block order.
  const Problem pb = problem_for(c, Format::bf16, Format::bf16, 11);
  Fa2Choices forward;
  forward.reverse_blocks = false;
  CHECK(differing(run_fa2_twin(pb, kNoSplitSm80, {}, fma, exp2),
                  fa2_reference(pb, plan, fma, exp2, forward)) > 0);
}

TEST_CASE("fa2-cuda tiles follow flash_fwd_launch_template.h and the split heuristic flash_api.cpp",
          "[attention][twins]") {
  const twins::GpuProfile& a100 = *twins::find_gpu_profile("sm80");
  const twins::GpuProfile& ada = *twins::find_gpu_profile("sm89");
  const twins::GpuProfile& h100 = *twins::find_gpu_profile("sm90");
  struct Row {
    int d;
    bool causal;
    const twins::GpuProfile* gpu;
    int kheaddim, block_m, block_n;
  };
  // run_mha_fwd_hdim{32,64,96,128,192,256} without dropout; many heads so that none splits.
  const Row rows[] = {
      {32, false, &a100, 32, 128, 128},  {64, true, &h100, 64, 128, 128},
      {80, false, &a100, 96, 128, 64},   {96, true, &ada, 96, 64, 64},
      {128, false, &a100, 128, 128, 64}, {128, false, &ada, 128, 128, 32},
      {128, true, &ada, 128, 64, 64},    {128, true, &h100, 128, 128, 64},
      {160, false, &h100, 192, 128, 64}, {256, false, &a100, 256, 128, 64},
      {256, false, &h100, 256, 64, 64},  {256, false, &ada, 256, 64, 64},
  };
  for (const Row& r : rows) {
    CAPTURE(r.d, r.causal, r.gpu->name);
    twins::Fa2Plan plan;
    REQUIRE(twins::fa2_plan({8, 32, 1024, 1024, r.d}, r.causal, *r.gpu, plan, nullptr));
    CHECK(plan.head_dim_padded == r.kheaddim);
    CHECK(plan.block_m == r.block_m);
    CHECK(plan.block_n == r.block_n);
    CHECK(plan.num_splits == 1);
  }
  // The source's own example: batch * heads = 48 on 108 SMs takes 2 splits (efficiency 0.89).
  CHECK(twins::fa2_num_splits_heuristic(48, 108, 64, 128) == 2);
  CHECK(twins::fa2_num_splits_heuristic(200, 108, 64, 128) == 1);  // >= 0.8 * SMs
  // One head of N = 1024, d = 64 on an H100: 16 query blocks of 64 on 264 "SMs", 4 K/V blocks of
  // 256: every eligible split count is below one wave; 4 splits.
  twins::Fa2Plan plan;
  REQUIRE(twins::fa2_plan({1, 1, 1024, 1024, 64}, false, h100, plan, nullptr));
  CHECK(plan.num_splits == 4);
  CHECK(plan.split_block_n == 256);
  std::string why;
  CHECK_FALSE(twins::fa2_plan({1, 1, 64, 64, 264}, false, h100, plan, &why));
  CHECK_THAT(why, Catch::Contains("up to 256"));
}

TEST_CASE("fa2-cuda split-KV path: per-split passes, fp32 partial O, and the combine kernel",
          "[attention][twins]") {
  // One head, N = 1024, d = 64 on sm90: 4 splits of one 256-key block each, 64-row CTAs.
  const TwinCase c{"N=1024 d=64", {1, 1, 1024, 1024, 64}, false};
  const Problem p = problem_for(c, Format::bf16, Format::bf16, 3);
  const twins::GpuProfile& h100 = *twins::find_gpu_profile("sm90");
  const twins::FmaChain fma;
  const twins::Exp2 exp2 = twins::project_exp2();
  const Tensor twin = run_fa2_twin(p, h100, {}, fma, exp2);
  // The reference: each split a reference row over its one block, lse = fma(max, scale, log l),
  // then combine_attn_seqk_parallel with kMaxSplits = 4 lanes (xor 2, xor 1).
  const float scale = static_cast<float>(p.scale);
  Tensor ref(1, 1, 1024, 64);
  Fa2Choices ch;
  ch.check_inf = false;  // even N: Is_even_MN, not causal
  for (int i = 0; i < 1024; ++i) {
    float lse[4];
    std::vector<std::vector<float>> o(4);
    for (int s = 0; s < 4; ++s) {
      const testing::Fa2RowResult r = testing::fa2_reference_row(
          row_of(p, 0, 0, i), 256, s, s + 1, fa2_scale_log2(p), p.policy.prob, fma, exp2, ch);
      lse[s] = std::fma(r.max, scale, static_cast<float>(std::log(static_cast<double>(r.sum))));
      o[s] = r.o;
    }
    const float mx = std::max(std::max(lse[0], lse[1]), std::max(lse[2], lse[3]));
    float e[4];
    for (int s = 0; s < 4; ++s) e[s] = numerics::exp_f32(lse[s] - mx);
    const float sum = (e[0] + e[2]) + (e[1] + e[3]);
    const float logsum = static_cast<float>(std::log(static_cast<double>(sum))) + mx;
    for (int t = 0; t < 64; ++t) {
      float acc = 0.f;
      for (int s = 0; s < 4; ++s) acc = std::fma(numerics::exp_f32(lse[s] - logsum), o[s][t], acc);
      ref.at(0, 0, i, t) = numerics::round_to(Format::bf16, acc);
    }
  }
  CHECK(differing(twin, ref) == 0);
}

TEST_CASE("mem-efficient twin equals an independent reference, and each modelled step matters",
          "[attention][twins]") {
  const twins::FmaChain fma;
  const twins::Exp2 exp2 = twins::project_exp2();
  const TwinCase cases[] = {
      {"N=75 d=64", {1, 2, 75, 75, 64}, false},
      {"N=300 d=64 causal", {1, 1, 300, 300, 64}, true},
      {"N=200 d=128", {1, 1, 200, 200, 128}, false},
      {"N_q=70 N_kv=150 d=64 causal", {1, 1, 70, 150, 64}, true},
  };
  const auto reference = [&](const Problem& p, const MemEffChoices& ch) {
    twins::MemEffPlan plan;
    REQUIRE(twins::mem_efficient_plan(p.shape, plan, nullptr));
    const Shape& s = p.shape;
    Tensor o(s.batch, s.heads, s.seq_q, s.head_dim);
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h)
        for (int i = 0; i < s.seq_q; ++i) {
          const int qs = i / plan.queries_per_block * plan.queries_per_block;
          const int keys =
              p.causal ? std::min(qs + s.seq_kv - s.seq_q + plan.queries_per_block, s.seq_kv)
                       : s.seq_kv;
          const std::vector<float> r = testing::mem_efficient_reference_row(
              row_of(p, b, h, i), plan.keys_per_block, keys, static_cast<float>(p.scale),
              p.policy.prob, fma, exp2, ch);
          for (int t = 0; t < s.head_dim; ++t)
            o.at(b, h, i, t) = numerics::round_to(p.policy.output, r[t]);
        }
    return o;
  };
  const auto twin = [&](const Problem& p) {
    twins::TwinSetup setup;
    setup.mma = &fma;
    setup.exp2 = exp2;
    Output out = empty_output(p.shape);
    twins::run_mem_efficient(p, setup, out);
    return out.o;
  };
  for (const TwinCase& c : cases)
    for (Format in : {Format::bf16, Format::fp16}) {
      CAPTURE(c.name, numerics::format_name(in));
      const Problem p = problem_for(c, in, in, 5);
      CHECK(differing(twin(p), reference(p, {})) == 0);
    }
  // d = 128: the scale 2^-3.5 is not a power of two, so scale then log2(e) rounds differently
  // from their product.
  const TwinCase steps{"N=300 d=128 causal", {1, 1, 300, 300, 128}, true};
  const Problem p = problem_for(steps, Format::fp16, Format::fp32, 9);
  const Tensor t = twin(p);
  REQUIRE(differing(t, reference(p, {})) == 0);
  MemEffChoices reverse, one_product, in_order;
  reverse.forward_blocks = false;
  one_product.two_multiplies = false;
  in_order.warp_partials = false;
  CHECK(differing(t, reference(p, reverse)) > 0);
  CHECK(differing(t, reference(p, one_product)) > 0);
  CHECK(differing(t, reference(p, in_order)) > 0);
}

TEST_CASE(
    "mem-efficient tiles follow dispatch_cutlassF, and head dims it has no kernel for are refused",
    "[attention][twins]") {
  twins::MemEffPlan plan;
  REQUIRE(twins::mem_efficient_plan({1, 1, 16, 16, 64}, plan, nullptr));
  CHECK((plan.queries_per_block == 64 && plan.keys_per_block == 64 && plan.output_in_registers));
  REQUIRE(twins::mem_efficient_plan({1, 1, 16, 16, 128}, plan, nullptr));
  CHECK((plan.queries_per_block == 64 && plan.keys_per_block == 128 && plan.warps_per_row == 4));
  REQUIRE(twins::mem_efficient_plan({1, 1, 16, 16, 160}, plan, nullptr));
  CHECK((plan.queries_per_block == 32 && !plan.output_in_registers));
  std::string why;
  CHECK_FALSE(twins::mem_efficient_plan({1, 1, 16, 16, 36}, plan, &why));
  CHECK_THAT(why, Catch::Contains("multiple of 8"));
}

TEST_CASE("mem-efficient with O in global memory (d > 128) stays within the kernel model's error",
          "[attention][twins]") {
  // The d > 128 kernel accumulates O across blocks in fp32 global memory (alpha/beta epilogue);
  // no second reference of it exists here, so this checks what the path must keep: finite output
  // close to the FP64 golden.
  const TwinCase c{"N=300 d=160", {1, 1, 300, 300, 160}, false};
  const Problem p = problem_for(c, Format::bf16, Format::bf16, 13);
  const twins::FmaChain fma;
  const twins::Exp2 exp2 = twins::project_exp2();
  twins::TwinSetup setup;
  setup.mma = &fma;
  setup.exp2 = exp2;
  Output out = empty_output(p.shape);
  twins::run_mem_efficient(p, setup, out);
  Options o;
  const Output gold = golden({p.q, p.k, p.v}, o);
  double worst = 0;
  for (std::size_t i = 0; i < out.o.data.size(); ++i)
    worst = std::max(worst, std::fabs(out.o.data[i] - gold.o.data[i]));
  CHECK(worst < 4 * std::ldexp(testing::max_abs(gold.o), -8));
}

}  // namespace attndev::attention
