// attndev match: candidates, the formats an output fits, and a ranking that finds the exact twin
// of an output computed by the emulator itself (and ranks an accuracy twin below it).
#include <catch2/catch.hpp>

#include <algorithm>

#include "experiment/spec/inputs.hpp"
#include "experiment/match.hpp"

using namespace attndev;
using namespace attndev::experiment;
using numerics::Format;

namespace {

const numerics::PrecisionPolicy& preset(const char* name) {
  return numerics::find_preset(name)->policy;
}

}  // namespace

TEST_CASE("formats_holding lists the formats that store every value exactly", "[match]") {
  attention::Tensor t(1, 1, 2, 2);
  t.data = {1.0, 0.5, -3.0, 0.0};
  CHECK(formats_holding(t) ==
        std::vector<Format>{Format::fp64, Format::fp32, Format::tf32, Format::fp16, Format::bf16});
  t.data[1] = 1.0 + 0x1p-9;  // in fp16 (10 fraction bits), not in bf16 (7)
  CHECK(formats_holding(t) ==
        std::vector<Format>{Format::fp64, Format::fp32, Format::tf32, Format::fp16});
  t.data[1] = 0.1;
  CHECK(formats_holding(t) == std::vector<Format>{Format::fp64});
}

TEST_CASE("ulp_of is the spacing of the format at a value, subnormal spacing below", "[match]") {
  CHECK(ulp_of(1.0, Format::bf16) == 0x1p-7);
  CHECK(ulp_of(-1.5, Format::bf16) == 0x1p-7);
  CHECK(ulp_of(3.0, Format::fp16) == 0x1p-9);
  CHECK(ulp_of(0.25, Format::fp32) == 0x1p-25);
  CHECK(ulp_of(1e-10, Format::fp16) == 0x1p-24);  // below fp16's normal range
  CHECK(ulp_of(0.0, Format::bf16) == 0.0);
}

TEST_CASE("default policies follow the output format, candidates cover algorithms and tiles",
          "[match]") {
  attention::Tensor bf16(1, 1, 1, 2);
  bf16.data = {0.5, 1.0 + 0x1p-7};  // bf16 and fp16 both hold these
  const std::vector<numerics::PrecisionPolicy> p = default_policies(bf16);
  const auto has = [&](const numerics::PrecisionPolicy& x) {
    return std::find(p.begin(), p.end(), x) != p.end();
  };
  CHECK(has(preset("kernel-bf16")));
  CHECK(has(preset("torch-math-fp16")));
  CHECK(has(preset("fp32")));
  CHECK_FALSE(has(preset("fp8-e4m3")));  // fp8 presets belong to the fp8 algorithms
  numerics::PrecisionPolicy upcast = preset("fp32");
  upcast.input = upcast.output = Format::bf16;
  CHECK(has(upcast));  // PyTorch's SDPA math backend since 2.5

  const std::vector<MatchCandidate> c =
      make_candidates({attention::Algorithm::baseline, attention::Algorithm::flash2},
                      {preset("kernel-bf16"), preset("fp32")}, {64}, {16, 32, 64});
  CHECK(c.size() == 2 + 2 * 3);
  CHECK(c[0].variant.name == "baseline kernel-bf16");
  CHECK(c[2].variant.name == "flash2 kernel-bf16 Bc=16");
  CHECK(c[2].variant.block_c == 16);
}

TEST_CASE("match finds the exact twin first and names it", "[match]") {
  const attention::Inputs in =
      make_inputs({1, 2, 40, 72, 16}, Distribution{}, /*seed=*/3, Format::bf16);
  attention::Options o;
  o.block_r = 8;
  o.block_c = 24;
  o.threads = 1;
  const attention::Output truth =
      attention::run(attention::Algorithm::flash2, preset("kernel-bf16"), in, o);
  const std::vector<MatchCandidate> c = make_candidates(
      {attention::Algorithm::baseline, attention::Algorithm::flash1, attention::Algorithm::flash2},
      default_policies(truth.o), {8}, {16, 24, 32});
  MatchOptions mo;
  mo.options.threads = 1;
  std::size_t progress = 0;
  mo.on_progress = [&](std::size_t done, std::size_t) { progress = done; };
  const std::vector<MatchResult> ranked = match_output(truth.o, in, c, mo);
  REQUIRE(ranked.size() == c.size());
  CHECK(progress == c.size());
  CHECK(ranked[0].candidate.variant.name == "flash2 kernel-bf16 Bc=24");
  CHECK(ranked[0].ulps.identical_fraction == 1.0);
  CHECK(ranked[0].difference.max_abs == 0.0);
  // The same policy at another Bc is an accuracy twin, not a rounding twin.
  const auto other = std::find_if(ranked.begin(), ranked.end(), [](const MatchResult& m) {
    return m.candidate.variant.name == "flash2 kernel-bf16 Bc=32";
  });
  REQUIRE(other != ranked.end());
  CHECK(other->ulps.identical_fraction < 1.0);
  CHECK(other->ulps.identical_fraction > 0.5);
  CHECK(ranked[0].max_diff_ulps_at_max == 0.0);
  CHECK(other->max_diff_ulps_at_max > 0.0);
  CHECK(match_verdict(ranked) ==
        "explained exactly by flash2 kernel-bf16 Bc=24: every element bit-identical");
  // Ranked by identical fraction.
  for (std::size_t i = 1; i < ranked.size(); ++i)
    CHECK(ranked[i - 1].ulps.identical_fraction >= ranked[i].ulps.identical_fraction);

  attention::Tensor wrong(1, 2, 39, 16);
  CHECK_THROWS_AS(match_output(wrong, in, c, mo), std::invalid_argument);
}
