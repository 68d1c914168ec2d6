// Host-only: the faithful kernels' row functions (lib/cuda/faithful_flash.cuh, ATTNDEV_HD) run on
// the CPU against attention::run, bit for bit, on the same random cases the GPU test uses. This
// checks the transcription of the emulator's loops in every build; what it cannot check is the
// device compiler (--fmad=false) and libdevice, which the GPU test covers (test/cuda/gpu_kernels).
#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

#include "attention/attention.hpp"
#include "cuda/faithful_flash.cuh"
#include "cuda/input_stage.hpp"
#include "cuda/tools/checks.hpp"
#include "cuda/tools/random_inputs.hpp"

using namespace attndev;

namespace {

// The kernel's grid, as a loop: every (batch, head, row) through the row function.
attention::Output run_rows_on_host(const cuda::tools::FaithfulCase& c,
                                   const attention::Inputs& in) {
  const cuda::StagedInputs staged = cuda::apply_input_stage(c.policy, in, c.options);
  const attention::Shape s = c.shape;
  attention::Output out;
  out.o = attention::Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  out.lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq_q, 0.0);
  std::vector<double> scratch(out.o.data.size());
  cuda::faithful::Params p{};
  p.q = staged.q.data();
  p.k = staged.k.data();
  p.v = staged.v.data();
  p.o = out.o.data.data();
  p.lse = out.lse.data();
  p.scratch = scratch.data();
  p.batch = s.batch;
  p.heads = s.heads;
  p.seq_q = s.seq_q;
  p.seq_kv = s.seq_kv;
  p.head_dim = s.head_dim;
  p.block_r = c.options.block_r;
  p.block_c = c.options.block_c;
  p.causal = c.options.causal;
  p.scale_scores = staged.scale_scores;
  p.scale = staged.scale;
  p.policy = c.policy;
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
  const auto cases = cuda::tools::faithful_cases(kSeed, 24);
  REQUIRE(cases.size() == 24);
  std::size_t elements = 0;
  for (const auto& c : cases) {
    INFO(c.name);
    const attention::Inputs in = cuda::tools::random_inputs(c.shape, c.seed, c.policy.input);
    const attention::Output cpu = attention::run(c.algorithm, c.policy, in, c.options);
    const attention::Output rows = run_rows_on_host(c, in);
    const auto cmp = cuda::tools::compare_bits(cpu.o.data, rows.o.data);
    INFO("mismatches " << cmp.mismatches << "; first at " << cmp.first_mismatch << ": emulator "
                       << cmp.cpu_value << " rows " << cmp.gpu_value);
    CHECK(cmp.compared == cpu.o.data.size());
    CHECK(cmp.mismatches == 0);
    // On the host both take log() from the same libm: lse must agree bit for bit too.
    CHECK(cuda::tools::compare_bits(cpu.lse, rows.lse).mismatches == 0);
    elements += cmp.compared;
  }
  CHECK(elements > 0);
}

TEST_CASE("a wrong policy is caught: the comparison can fail", "[cuda]") {
  // Guards the test above against comparing something with itself.
  auto c = cuda::tools::faithful_cases(7, 1).front();
  c.policy = numerics::find_preset("kernel-bf16")->policy;
  c.shape = {1, 1, 33, 33, 16};
  const attention::Inputs in = cuda::tools::random_inputs(c.shape, c.seed, c.policy.input);
  const attention::Output cpu = attention::run(c.algorithm, c.policy, in, c.options);
  c.policy.prob = numerics::Format::fp32;  // rows computed without the P cast
  const attention::Output rows = run_rows_on_host(c, in);
  CHECK(cuda::tools::compare_bits(cpu.o.data, rows.o.data).mismatches > 0);
}
