// The emulator's GEMMs on a tensor-core profile (attention/rows/tc_gemm.hpp): QK^T over d and
// P V over a block's keys are the profile's dot products in increasing k with the running
// accumulator as C, and a policy with "mma" takes them on the generic path. Refusals: a policy
// whose formats the architecture does not multiply, a twin's head dim its kernel lacks.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention.hpp"
#include "attention/rows/tc_gemm.hpp"
#include "numerics/mma.hpp"
#include "numerics/round.hpp"

using namespace attndev;
namespace mma = numerics::mma;

namespace {

std::vector<double> random_values(std::size_t n, numerics::Format f, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> x(n);
  for (double& v : x) v = numerics::round_to(f, nd(rng));
  return x;
}

attention::Inputs random_inputs(int n_q, int n_kv, int d, std::uint64_t seed) {
  attention::Inputs in;
  in.q = attention::Tensor(1, 1, n_q, d);   // (B, H, N_q, d)
  in.k = attention::Tensor(1, 1, n_kv, d);  // (B, H, N_kv, d)
  in.v = attention::Tensor(1, 1, n_kv, d);  // (B, H, N_kv, d)
  in.q.data = random_values(in.q.data.size(), numerics::Format::bf16, seed);
  in.k.data = random_values(in.k.data.size(), numerics::Format::bf16, seed + 1);
  in.v.data = random_values(in.v.data.size(), numerics::Format::bf16, seed + 2);
  return in;
}

}  // namespace

TEST_CASE("tensor-core GEMMs: scores and P V are the profile's dots in the kernel's k order",
          "[tc_gemm][mma]") {
  const int n = 40, d = 48;
  const auto q =
      random_values(static_cast<std::size_t>(n) * d, numerics::Format::bf16, 1);  // (N, d)
  const auto k =
      random_values(static_cast<std::size_t>(n) * d, numerics::Format::bf16, 2);  // (N, d)
  const auto v =
      random_values(static_cast<std::size_t>(n) * d, numerics::Format::bf16, 3);  // (N, d)
  numerics::PrecisionPolicy policy = numerics::find_preset("kernel-bf16")->policy;
  policy.mma = mma::Arch::sm80;
  using A = attention::rows::PolicyArith;
  const auto kern = attention::rows::tc_kernels<A>(policy, q.data(), k.data(), v.data(), d);
  const A a{policy};
  const mma::Operands op = mma::operands(numerics::Format::bf16, numerics::Format::bf16);
  // Scores of rows 3..5 against keys 16..(16 + count): each the sm80 dot over d from C = 0.
  const int counts[3] = {24, 0, 7};
  std::vector<double> s(3 * 24, -1.0);  // (rows, ld 24)
  kern.scores(a, 3, 3, 16, counts, s.data(), 24);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < counts[r]; ++j)
      CHECK(s[r * 24 + j] ==
            mma::dot<mma::Sm80F16>(op, &q[(3 + r) * d], 1, &k[(16 + j) * d], 1, d, 0.0));
  CHECK(s[24] == -1.0);  // a row with no key of the block is not written
  // P V of a block starting at key 8: acc(r, t) = dot over the keys (stride d in V), C = acc.
  std::vector<double> p = random_values(3 * 24, numerics::Format::bf16, 4);   // (rows, ld 24)
  std::vector<double> acc = random_values(3 * d, numerics::Format::fp32, 5);  // (rows, d)
  const std::vector<double> acc0 = acc;
  kern.pv(a, p.data(), 24, counts, 3, 8, acc.data(), d);
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < d; ++t)
      CHECK(acc[r * d + t] == mma::dot<mma::Sm80F16>(op, &p[r * 24], 1, &v[8 * d + t], d, counts[r],
                                                     acc0[r * d + t]));
}

TEST_CASE("a policy with \"mma\" runs the named profile, and sm89 is sm80 for 16-bit inputs",
          "[tc_gemm][mma]") {
  const attention::Inputs in = random_inputs(70, 90, 64, 7);
  attention::Options opt;
  opt.causal = true;
  // kernel-bf16 with O kept in fp32: a bf16 O would hide most fp32-level differences.
  numerics::PrecisionPolicy fma = numerics::find_preset("kernel-bf16")->policy;
  fma.output = numerics::Format::fp32;
  numerics::PrecisionPolicy sm80 = fma, sm90 = fma;
  sm80.mma = mma::Arch::sm80;
  sm90.mma = mma::Arch::sm90;
  CHECK(std::string(attention::kernel_path(attention::Algorithm::flash2, sm90, opt)) == "fast-f32");
  CHECK(std::string(attention::kernel_path(attention::Algorithm::flash1, sm90, opt)) == "fast-f32");
  CHECK(std::string(attention::kernel_path(attention::Algorithm::baseline, sm90, opt)) ==
        "fast-f32");
  for (attention::Algorithm alg : attention::kAllAlgorithms) {
    INFO(attention::algorithm_name(alg));
    const auto o_fma = attention::run(alg, fma, in, opt).o.data;
    const auto o80 = attention::run(alg, sm80, in, opt).o.data;
    const auto o90 = attention::run(alg, sm90, in, opt).o.data;
    CHECK(o_fma != o80);  // the profile is used ...
    CHECK(o80 != o90);    // ... and it is the named one
    // sm89's 16-bit tensor cores are sm80's.
    numerics::PrecisionPolicy sm89 = fma;
    sm89.mma = mma::Arch::sm89;
    CHECK(attention::run(alg, sm89, in, opt).o.data == o80);
  }
}

TEST_CASE("the fast path on a tensor-core profile equals the generic path bit for bit",
          "[tc_gemm][mma]") {
  // Every profile of 16-bit, fp8 and tf32 operands; odd shapes (tails of the 16-lane groups and
  // of the k blocks); and inputs with huge values whose scores overflow to inf and NaN (the
  // lanes the fast form hands back to the scalar model).
  struct Run {
    const char* base;
    mma::Arch arch;
    double huge;  // inf: a zero of Q against an inf of K and of V (0 x inf is NaN in the model)
  };
  const Run runs[] = {{"kernel-bf16", mma::Arch::sm80, 0},
                      {"kernel-fp16", mma::Arch::sm90, 0},
                      {"kernel-bf16", mma::Arch::sm100, 0},
                      {"fp8-e4m3", mma::Arch::sm89, 0},
                      {"fp8-e4m3", mma::Arch::sm90, 0},
                      {"fp8-e4m3", mma::Arch::sm100, 0},
                      {"fp32", mma::Arch::sm80, 0},
                      {"fp32", mma::Arch::sm90, 0},
                      {"kernel-bf16", mma::Arch::sm90, 1e30},
                      {"kernel-fp16", mma::Arch::sm80, 3e4},
                      {"kernel-bf16", mma::Arch::sm90, INFINITY}};
  for (const Run& run : runs) {
    numerics::PrecisionPolicy policy = numerics::find_preset(run.base)->policy;
    policy.mma = run.arch;
    INFO(run.base << " on " << mma::arch_name(run.arch) << " huge " << run.huge);
    attention::Inputs in = random_inputs(45, 83, 40, 21);
    if (std::isinf(run.huge)) {
      in.q.data[40 + 7] = 0;  // row 1, column 7
      in.k.data[2 * 40 + 7] = run.huge;
      in.v.data[3 * 40 + 9] = -run.huge;
    } else if (run.huge != 0) {
      in.q.data[5] = run.huge;
      in.k.data[45] = -run.huge;  // key 1, the same column: its score overflows
      in.v.data[3] = run.huge;
    }
    for (auto [alg, causal] : {std::pair{attention::Algorithm::flash2, false},
                               std::pair{attention::Algorithm::flash2, true},
                               std::pair{attention::Algorithm::flash1, true},
                               std::pair{attention::Algorithm::baseline, false}}) {
      INFO(attention::algorithm_name(alg));
      attention::Options fast, generic;
      fast.causal = generic.causal = causal;
      fast.block_c = generic.block_c = 48;
      generic.path = attention::Options::Path::generic;
      REQUIRE(std::string(attention::kernel_path(alg, policy, fast)) == "fast-f32");
      const attention::Output f = attention::run(alg, policy, in, fast);
      const attention::Output g = attention::run(alg, policy, in, generic);
      // Equal bits, or both NaN: a NaN's sign after the row functions' own arithmetic (alpha =
      // exp(inf - inf) times a NaN) is the x86 rule of the first operand, which the compiled
      // operand order of each path decides; the GEMMs' NaN is the model's canonical one in both.
      auto same = [](double x, double y) {
        return numerics::bits_of(x) == numerics::bits_of(y) || (x != x && y != y);
      };
      std::size_t differ = 0, first = 0;
      for (std::size_t e = 0; e < f.o.data.size(); ++e)
        if (!same(f.o.data[e], g.o.data[e]) && differ++ == 0) first = e;
      INFO("causal " << causal << ", first difference at " << first << ": fast " << f.o.data[first]
                     << ", generic " << g.o.data[first]);
      CHECK(differ == 0);
      for (std::size_t i = 0; i < f.lse.size(); ++i) CHECK(same(f.lse[i], g.lse[i]));
    }
  }
}

TEST_CASE("tensor-core policies and twins refuse what they cannot run", "[tc_gemm][mma]") {
  const attention::Inputs in = random_inputs(16, 16, 96, 9);
  attention::Options opt;
  numerics::PrecisionPolicy fp8 = numerics::find_preset("fp8-e4m3")->policy;
  fp8.mma = mma::Arch::sm80;
  CHECK_THROWS_WITH(attention::run(attention::Algorithm::flash2, fp8, in, opt),
                    Catch::Contains("profiles that do: sm89, sm90, sm100"));
  numerics::PrecisionPolicy twin = numerics::find_preset("kernel-bf16")->policy;
  twin.mma = mma::Arch::sm90;
  const std::string why =
      attention::unsupported_reason(attention::Algorithm::flash2_tc_twin, twin, in.shape());
  CHECK(why == "flash2-tc-twin: head_dim 96 not instantiated in flash2-tc (have 64, 128)");
  CHECK_THROWS_WITH(attention::run(attention::Algorithm::flash2_tc_twin, twin, in, opt), why);
  CHECK(attention::unsupported_reason(attention::Algorithm::flash2_tc_twin,
                                      numerics::find_preset("fp32")->policy, {1, 1, 16, 16, 64})
            .find("kernel-bf16 / kernel-fp16") != std::string::npos);
  CHECK(
      attention::unsupported_reason(attention::Algorithm::flash2_tc_twin, twin, {1, 1, 16, 16, 128})
          .empty());
}
