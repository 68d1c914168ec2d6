// Memory estimates: saturating products (a shape whose size wraps size_t is "more than any
// machine", never a small number), and the Tensor constructor refusing such a shape.
#include <catch2/catch.hpp>

#include <cstdint>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/memory.hpp"
#include "experiment/spec/plan.hpp"
#include "io/memory.hpp"

using namespace attndev;

TEST_CASE("saturating byte arithmetic and its text", "[memory]") {
  CHECK(io::sat_mul(1ull << 32, 1ull << 32) == io::kBytesOverflow);
  CHECK(io::sat_mul(1ull << 31, 1ull << 32) == 1ull << 63);
  CHECK(io::sat_add(io::kBytesOverflow - 1, 2) == io::kBytesOverflow);
  CHECK(io::sat_mul(0, io::kBytesOverflow) == 0);
  CHECK(io::format_bytes(1536) == "1.5 KiB (1536 bytes)");
  CHECK(io::format_bytes(12) == "12 bytes");
  CHECK_THAT(io::format_bytes(io::kBytesOverflow), Catch::Contains("overflow"));
  CHECK(io::available_memory_bytes().value_or(1) > 0);
}

TEST_CASE("a shape past 2^64 bytes saturates every estimate and the tensor refuses it",
          "[memory]") {
  const attention::Shape huge{65536, 65536, 1 << 20, 1 << 20, 1 << 20};
  CHECK(experiment::tensor_bytes(65536, 65536, 1 << 20, 1 << 20) == io::kBytesOverflow);
  CHECK(experiment::inputs_bytes(huge) == io::kBytesOverflow);
  CHECK(experiment::attention_run_bytes(huge, attention::Options{}, 1) == io::kBytesOverflow);
  CHECK_THROWS_AS(attention::Tensor(65536, 65536, 1 << 20, 1 << 20), std::length_error);
  CHECK_THROWS_AS(attention::Tensor(1, -1, 4, 4), std::invalid_argument);
  CHECK_THROWS_AS(io::require_memory(io::kBytesOverflow, "x"), io::MemoryError);
}

TEST_CASE("estimates grow with the shape and cover what the emulator holds", "[memory]") {
  const attention::Shape s{2, 3, 100, 80, 16};
  CHECK(experiment::inputs_bytes(s) == 8u * (2 * 3 * 100 * 16 + 2 * 2 * 3 * 80 * 16));
  CHECK(experiment::output_bytes(s) == 8u * (2 * 3 * 100 * 16 + 2 * 3 * 100));
  const std::uint64_t run = experiment::attention_run_bytes(s, attention::Options{}, 1);
  // At least the input stage's copy and the output.
  CHECK(run >= experiment::inputs_bytes(s) + experiment::output_bytes(s));
  const attention::Shape longer{2, 3, 200, 160, 16};
  CHECK(experiment::attention_run_bytes(longer, attention::Options{}, 1) > run);
  CHECK(experiment::attention_run_bytes(s, attention::Options{}, 4) > run);  // per-thread rows

  const experiment::Config c = experiment::parse_config(
      R"({"name": "m", "axes": {"seq_len": [64, 512], "head_dim": 32},
          "variants": [{"algorithm": "flash2", "policy": "kernel-bf16"},
                       {"algorithm": "baseline", "policy": "fp32"}]})");
  const experiment::Plan plan = experiment::make_plan(c);
  const experiment::PlanPeak peak = experiment::plan_peak_bytes(c, plan, 1);
  REQUIRE(peak.point);
  CHECK(peak.point->shape().seq_q == 512);
  // Two input formats (bf16, fp32): both input sets and goldens are held.
  CHECK(peak.bytes >= 2 * (experiment::inputs_bytes(peak.point->shape()) +
                           experiment::output_bytes(peak.point->shape())));
}

TEST_CASE("tiles larger than the sequence are counted as the emulator allocates them", "[memory]") {
  // Issue 39 row 5: Br = Bc = 10^5 at N = 64, d = 8 was estimated at 298 GiB (rows and keys
  // taken as the tile sizes); the emulator holds min(Br, N) rows of one 10^5-column tile.
  const attention::Shape s{1, 1, 64, 64, 8};
  attention::Options big;
  big.block_r = 100000;
  big.block_c = 100000;
  const std::uint64_t bytes = experiment::attention_run_bytes(s, big, 2);
  CHECK(bytes < (std::uint64_t{200} << 20));
  CHECK(bytes > std::uint64_t{64} * 100000 * 8);  // one work item's row block of the tile
  // Br alone never counts past N: 10^9 rows at N = 64 cost what 64 rows cost.
  attention::Options tall;
  tall.block_r = 1000000000;
  attention::Options n_rows;
  n_rows.block_r = 64;
  CHECK(experiment::attention_run_bytes(s, tall, 2) ==
        experiment::attention_run_bytes(s, n_rows, 2));
  CHECK(experiment::attention_run_bytes(s, tall, 2) != io::kBytesOverflow);
}

TEST_CASE("result rows are counted: 10^6 points x 3 variants need about 22 GB", "[memory]") {
  const experiment::Config c = experiment::parse_config(
      R"({"name": "m", "axes": {"seq_len": [64]},
          "variants": [{"algorithm": "flash2", "policy": "kernel-bf16"},
                       {"algorithm": "flash1", "policy": "kernel-bf16"},
                       {"algorithm": "baseline", "policy": "fp32"}]})");
  CHECK(experiment::rows_bytes(c, 1000000) == 3000000 * experiment::kResultRowBytes);
  CHECK(experiment::rows_bytes(c, 1000000) > (std::uint64_t{20} << 30));
}
