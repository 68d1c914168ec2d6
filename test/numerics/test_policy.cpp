// Presets carry the stages docs/numerics.md documents; parse_format accepts its aliases.
#include <catch2/catch.hpp>

#include <string_view>

#include "numerics/policy.hpp"

using namespace attndev::numerics;

TEST_CASE("presets have the documented stages", "[policy]") {
  const PolicyPreset* k = find_preset("kernel-bf16");
  REQUIRE(k != nullptr);
  CHECK(k->policy.input == Format::bf16);
  CHECK(k->policy.score_accum == Format::fp32);
  CHECK(k->policy.score == Format::fp32);
  CHECK(k->policy.stats == Format::fp32);
  CHECK(k->policy.prob == Format::bf16);
  CHECK(k->policy.out_accum == Format::fp32);
  CHECK(k->policy.output == Format::bf16);
  const PolicyPreset* w = find_preset("working-fp16");
  REQUIRE(w != nullptr);
  CHECK(w->policy.score == Format::fp16);
  CHECK(w->policy.stats == Format::fp16);
  CHECK(w->policy.prob == Format::fp16);
  CHECK(w->policy.score_accum == Format::fp32);
  const PolicyPreset* t = find_preset("torch-math-bf16");
  REQUIRE(t != nullptr);
  CHECK(t->policy.score == Format::bf16);
  CHECK(t->policy.stats == Format::fp32);
  const PolicyPreset* f8 = find_preset("fp8-e4m3");
  REQUIRE(f8 != nullptr);
  CHECK(f8->policy.input == Format::fp8_e4m3);
  CHECK(f8->policy.prob == Format::fp8_e4m3);
  CHECK(f8->policy.output == Format::bf16);
  CHECK(f8->policy.fp8_overflow == Overflow::saturate);
  REQUIRE(find_preset("fp64") != nullptr);
  CHECK(find_preset("fp64")->policy == kGoldenPolicy);
  for (Stage s : kAllStages) CHECK(find_preset("fp32")->policy[s] == Format::fp32);
  CHECK(find_preset("kernel-fp8") == nullptr);
  // Every preset name is unique.
  int n = 0;
  for (const PolicyPreset& a : kPolicyPresets) {
    ++n;
    CHECK(find_preset(a.name) == &a);
  }
  CHECK(n >= 9);
}

TEST_CASE("policy rounding uses the stage format and fp8 overflow rule", "[policy]") {
  PrecisionPolicy p = find_preset("fp8-e4m3")->policy;
  CHECK(p.round(Stage::input, 1000.0) == 448.0);  // saturating, as FA-3's casts
  p.fp8_overflow = Overflow::to_nan;
  CHECK(p.round(Stage::input, 1000.0) != p.round(Stage::input, 1000.0));  // NaN
  CHECK(p.round(Stage::output, 1.0 + 0x1p-9) == 1.0);                     // bf16 output
  CHECK(p.round(Stage::stats, 1.0 + 0x1p-30) == 1.0);                     // fp32 stats
}

TEST_CASE("parse_format aliases", "[policy]") {
  struct Case {
    std::string_view text;
    Format want;
  };
  const Case cases[] = {
      {"fp64", Format::fp64},     {"double", Format::fp64},       {"float64", Format::fp64},
      {"fp32", Format::fp32},     {"float", Format::fp32},        {"float32", Format::fp32},
      {"tf32", Format::tf32},     {"fp16", Format::fp16},         {"half", Format::fp16},
      {"float16", Format::fp16},  {"bf16", Format::bf16},         {"bfloat16", Format::bf16},
      {"e4m3", Format::fp8_e4m3}, {"fp8-e4m3", Format::fp8_e4m3}, {"fp8_e4m3", Format::fp8_e4m3},
      {"e5m2", Format::fp8_e5m2}, {"fp8-e5m2", Format::fp8_e5m2}, {"fp8_e5m2", Format::fp8_e5m2}};
  for (const Case& c : cases) {
    Format f = Format::fp64;
    INFO(c.text);
    CHECK(parse_format(c.text, f));
    CHECK(f == c.want);
  }
  Format f = Format::bf16;
  CHECK_FALSE(parse_format("fp12", f));
  CHECK_FALSE(parse_format("", f));
  CHECK_FALSE(parse_format("BF16", f));  // case-sensitive: the config validator suggests
  CHECK(f == Format::bf16);              // untouched on failure
  for (Format g : kAllFormats) {
    Format back = Format::fp64;
    CHECK(parse_format(traits(g).name, back));
    CHECK(back == g);
  }
}

// operator[] and at() read the one stage table: each stage names its own member, distinct from
// every other stage's, and the answer is available at compile time (device code uses it too).
TEST_CASE("each stage reads and writes its own member of the policy", "[policy]") {
  static_assert(detail::kernel_policy(Format::bf16)[Stage::prob] == Format::bf16);
  static_assert(detail::kernel_policy(Format::bf16)[Stage::stats] == Format::fp32);
  for (Stage s : kAllStages) {
    PrecisionPolicy p = kGoldenPolicy;  // every stage fp64
    p.at(s) = Format::fp8_e5m2;
    INFO(stage_name(s));
    for (Stage other : kAllStages) CHECK((p[other] == Format::fp8_e5m2) == (other == s));
  }
  const PrecisionPolicy named{Format::fp16,     Format::fp32, Format::bf16,    Format::tf32,
                              Format::fp8_e4m3, Format::fp64, Format::fp8_e5m2};
  CHECK(named[Stage::input] == named.input);
  CHECK(named[Stage::score_accum] == named.score_accum);
  CHECK(named[Stage::score] == named.score);
  CHECK(named[Stage::stats] == named.stats);
  CHECK(named[Stage::prob] == named.prob);
  CHECK(named[Stage::out_accum] == named.out_accum);
  CHECK(named[Stage::output] == named.output);
}
