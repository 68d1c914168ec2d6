// Bit-identity across thread counts and work scheduling orders (the invariant in threads.cpp).
#include <atomic>

#include "attention/parallel.hpp"
#include "helpers.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

TEST_CASE("results are bit-identical for 1 and 2 threads and shuffled Q-block order",
          "[attention][threads]") {
  const Shape s{2, 3, 77, 61, 24};
  const std::uint64_t seed = 4242;
  INFO("seed=" << seed);
  std::size_t compared = 0;
  for (const char* name : {"kernel-bf16", "working-fp16", "torch-math-bf16", "fp64"}) {
    const nx::PrecisionPolicy pol = preset(name);
    const Inputs in = random_inputs(s, seed, pol.input);
    for (Algorithm a : kAllAlgorithms) {
      for (Options::Path path : {Options::Path::automatic, Options::Path::generic}) {
        for (bool causal : {false, true}) {
          Options opt;
          opt.causal = causal;
          opt.block_r = 8;
          opt.block_c = 16;
          opt.path = path;
          opt.threads = 1;
          INFO(name << " " << algorithm_name(a) << " " << kernel_path(a, pol, opt) << " "
                    << describe(s, opt));
          const Output one = run(a, pol, in, opt);
          opt.threads = 2;
          CHECK(bit_differences(one, run(a, pol, in, opt)) == 0);
          for (std::uint64_t schedule : {1u, 99u}) {
            opt.schedule_seed = schedule;
            CHECK(bit_differences(one, run(a, pol, in, opt)) == 0);
          }
          compared += max_abs(one.o) > 0.0;  // something was computed, so equality means something
        }
      }
    }
  }
  CHECK(compared == 4 * 3 * 2 * 2);
}

// Cancellation (parallel.hpp): a set flag stops every parallel_for started under the scope, also
// from inside an item (the emulator's packing runs one inside run()), and throws Cancelled; a
// clear flag changes nothing; leaving the scope restores the outer one.
TEST_CASE("a cancelled emulator call throws and a clear flag changes nothing",
          "[attention][threads]") {
  const Shape s{1, 2, 200, 200, 16};
  const Inputs in = random_inputs(s, 5, nx::Format::bf16);
  Options opt;
  opt.threads = 2;
  const Output plain = run(Algorithm::flash2, preset("kernel-bf16"), in, opt);
  std::atomic<bool> flag{false};
  {
    const CancelScope scope(flag);
    CHECK(bit_differences(run(Algorithm::flash2, preset("kernel-bf16"), in, opt), plain) == 0);
    flag = true;
    for (Algorithm a : kAllAlgorithms)
      CHECK_THROWS_AS(run(a, preset("kernel-bf16"), in, opt), Cancelled);
    CHECK_THROWS_AS(golden(in, opt), Cancelled);
    // Set while items run: the ones not yet started are never run.
    std::atomic<int> ran{0};
    CHECK_THROWS_AS(parallel_for(1000, 2, 0,
                                 [&](std::size_t) {
                                   flag = true;
                                   ++ran;
                                 }),
                    Cancelled);
    CHECK(ran.load() <= 2);
  }
  // Outside the scope the flag is nobody's business.
  CHECK(bit_differences(run(Algorithm::flash2, preset("kernel-bf16"), in, opt), plain) == 0);
  std::atomic<bool> outer{false}, inner{true};
  const CancelScope outer_scope(outer);
  {
    const CancelScope inner_scope(inner);
    CHECK_THROWS_AS(golden(in, opt), Cancelled);
  }
  CHECK(bit_differences(golden(in, opt), golden(in, Options{})) == 0);
}
