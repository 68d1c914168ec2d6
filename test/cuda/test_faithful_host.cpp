// Host-only: the CUDA kernels' row functions (ATTNDEV_HD) run on the CPU against attention::run,
// bit for bit: the faithful flash kernels (lib/cuda/faithful_flash.cuh) on the same random cases
// the GPU test uses, and the cuBLAS baseline's softmax rows (lib/cuda/baseline_softmax.cuh) fed
// the emulator's dot products. The kernels share the emulator's row functions (lib/attention/rows),
// so this checks the glue in every build; what it cannot check is the device compiler
// (--fmad=false), libdevice and cuBLAS, which the GPU test covers (test/cuda/gpu_kernels).
#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

#include "attention/attention.hpp"
#include "attention/problem.hpp"
#include "cuda/baseline_softmax.cuh"
#include "cuda/faithful_flash.cuh"
#include "cuda_check/checks.hpp"

using namespace attndev;

namespace {

// The kernel's grid, as a loop: every (batch, head, row) through the row function, with the
// operands and scales the launcher would upload (the emulator's own input stage).
attention::Output run_rows_on_host(const cuda_check::FaithfulCase& c, const attention::Inputs& in) {
  const attention::Problem staged = attention::make_problem(c.policy, in, c.options);
  const attention::Shape s = c.shape;
  attention::Output out;
  out.o = attention::Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  cuda::faithful::Params p{};
  p.rows = staged.row_params();
  std::vector<double> scratch(out.lse.size() *
                              cuda::faithful::scratch_per_row(c.algorithm, p.rows));
  p.q = staged.q.data.data();
  p.k = staged.k.data.data();
  p.v = staged.v.data.data();
  p.o = out.o.data.data();
  p.lse = out.lse.data();
  p.scratch = scratch.data();
  p.batch = s.batch;
  p.heads = s.heads;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.seq_q; ++i) {
        if (c.algorithm == attention::Algorithm::flash2)
          cuda::faithful::flash2_row(p, b, h, i);
        else
          cuda::faithful::flash1_row(p, b, h, i);
      }
  return out;
}

}  // namespace

TEST_CASE("faithful row functions reproduce attention::run bit for bit (host)", "[cuda]") {
  constexpr std::uint64_t kSeed = 20240502;  // the GPU test's seed: the same 24 cases
  std::printf("faithful host cases: seed %llu\n", static_cast<unsigned long long>(kSeed));
  const auto cases = cuda_check::faithful_cases(kSeed, 24);
  REQUIRE(cases.size() == 24);
  std::size_t elements = 0;
  for (const auto& c : cases) {
    INFO(c.name);
    const attention::Inputs in = cuda_check::random_inputs(c.shape, c.seed, c.policy.input);
    const attention::Output cpu = attention::run(c.algorithm, c.policy, in, c.options);
    const attention::Output rows = run_rows_on_host(c, in);
    const auto cmp = cuda_check::compare_bits(cpu.o.data, rows.o.data);
    INFO("mismatches " << cmp.mismatches << "; first at " << cmp.first_mismatch << ": emulator "
                       << cmp.reference_value << " rows " << cmp.output_value);
    CHECK(cmp.compared == cpu.o.data.size());
    CHECK(cmp.mismatches == 0);
    // On the host both take log() from the same libm: lse must agree bit for bit too.
    CHECK(cuda_check::compare_bits(cpu.lse, rows.lse).mismatches == 0);
    elements += cmp.compared;
  }
  CHECK(elements > 0);
}

TEST_CASE("a wrong policy is caught: the comparison can fail", "[cuda]") {
  // Guards the test above against comparing something with itself.
  auto c = cuda_check::faithful_cases(7, 1).front();
  c.policy = numerics::find_preset("kernel-bf16")->policy;
  c.shape = {1, 1, 33, 33, 16};
  const attention::Inputs in = cuda_check::random_inputs(c.shape, c.seed, c.policy.input);
  const attention::Output cpu = attention::run(c.algorithm, c.policy, in, c.options);
  c.policy.prob = numerics::Format::fp32;  // rows computed without the P cast
  const attention::Output rows = run_rows_on_host(c, in);
  CHECK(cuda_check::compare_bits(cpu.o.data, rows.o.data).mismatches > 0);
}

namespace {

// The cuBLAS baseline on the host, with the emulator's sequential dot products in place of the
// GEMMs: dots (N_kv per row, in the GEMM's accumulator type Acc) -> softmax_row_from_dots, the
// kernel's row function -> P -> O = R_output(sum_j P_ij V_jt). With the GEMMs made equal, the
// result must equal the emulator's baseline bit for bit: what is left is the softmax.
template <class Acc>
attention::Output cublas_baseline_on_host(const numerics::PrecisionPolicy& policy,
                                          const attention::Inputs& in,
                                          const attention::Options& options) {
  using attention::rows::Stage;
  const attention::Problem staged = attention::make_problem(policy, in, options);
  const attention::rows::Params rp = staged.row_params();
  const attention::rows::PolicyArith a{policy};
  const attention::Shape s = staged.shape;
  const int d = s.head_dim;
  attention::Output out;
  out.o = attention::Tensor(s.batch, s.heads, s.seq_q, d);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  std::vector<Acc> dots(static_cast<std::size_t>(s.seq_kv));      // (N_kv) one row of the GEMM
  std::vector<double> probs(static_cast<std::size_t>(s.seq_kv));  // (N_kv) one row of P
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.seq_q; ++i) {
        const double* q_i = staged.q.head_ptr(b, h) + static_cast<std::size_t>(i) * d;
        for (int j = 0; j < s.seq_kv; ++j) {
          const double* k_j = staged.k.head_ptr(b, h) + static_cast<std::size_t>(j) * d;
          double dot = 0.0;
          for (int t = 0; t < d; ++t) dot = a.mac(Stage::score_accum, dot, q_i[t], k_j[t]);
          dots[static_cast<std::size_t>(j)] = static_cast<Acc>(dot);  // exact: dot is an Acc
        }
        double* lse = out.lse.data() + (static_cast<std::size_t>(b) * s.heads + h) * s.seq_q + i;
        cuda::baseline::softmax_row_from_dots(
            rp, dots.data(), i, [&](int j, double p) { probs[static_cast<std::size_t>(j)] = p; },
            lse);
        const int n = attention::rows::visible_count(i, s.seq_q, s.seq_kv, rp.causal);
        for (int t = 0; t < d; ++t) {
          double acc = 0.0;
          for (int j = 0; j < n; ++j)
            acc = a.mac(Stage::out_accum, acc, probs[static_cast<std::size_t>(j)],
                        staged.v.at(b, h, j, t));
          out.o.at(b, h, i, t) = a.round(Stage::output, acc);
        }
      }
  return out;
}

}  // namespace

TEST_CASE("the cuBLAS baseline's softmax rows reproduce the emulator given its dot products",
          "[cuda]") {
  constexpr std::uint64_t kSeed = 20240503;
  std::size_t compared = 0;
  for (const char* name : {"torch-math-bf16", "torch-math-fp16", "kernel-fp16", "fp32", "fp64"}) {
    const numerics::PrecisionPolicy policy = numerics::find_preset(name)->policy;
    for (const attention::Shape& shape :
         {attention::Shape{1, 2, 33, 33, 16}, attention::Shape{2, 1, 40, 17, 8},
          attention::Shape{1, 1, 7, 64, 5}}) {
      for (bool causal : {false, true}) {
        attention::Options opt;
        opt.causal = causal;
        opt.scale_placement =
            shape.seq_q == 7 ? attention::ScalePlacement::query : attention::ScalePlacement::scores;
        attention::Inputs in = cuda_check::random_inputs(shape, kSeed, policy.input);
        // Row 0 (causal: it sees key 0 only) gets a score of -inf in fp16 scores: the guard.
        in.q.at(0, 0, 0, 0) = 1000.0;
        in.k.at(0, 0, 0, 0) = -1000.0;
        INFO(name << " Nq=" << shape.seq_q << " Nkv=" << shape.seq_kv << " d=" << shape.head_dim
                  << (causal ? " causal" : ""));
        const attention::Output cpu =
            attention::run(attention::Algorithm::baseline, policy, in, opt);
        const attention::Output gpu_rows = policy.score_accum == numerics::Format::fp64
                                               ? cublas_baseline_on_host<double>(policy, in, opt)
                                               : cublas_baseline_on_host<float>(policy, in, opt);
        CHECK(cuda_check::compare_bits(cpu.o.data, gpu_rows.o.data).mismatches == 0);
        CHECK(cuda_check::compare_bits(cpu.lse, gpu_rows.lse).mismatches == 0);
        compared += cpu.o.data.size();
      }
    }
  }
  CHECK(compared > 0);
}
