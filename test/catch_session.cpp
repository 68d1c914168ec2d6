// Catch2's implementation, compiled once (about 20 s of CPU). In its own object, apart from
// main() (catch_main.cpp), so that a test with a main of its own (test/cuda/gpu_kernels.cpp,
// test/experiment/external_numpy.cpp: exit 77 when they cannot run) links the same library: the
// linker takes catch_main.o only when main is missing.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_run.hpp"

namespace attndev::test {
int run_catch_session(int argc, char** argv) {
  return Catch::Session().run(argc, argv);
}
}  // namespace attndev::test
