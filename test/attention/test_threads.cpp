// Bit-identity across thread counts and work scheduling orders (the invariant in threads.cpp).
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
