// Policy JSON: every preset and random custom policies round-trip; every bad key, format or
// preset is refused with a message that says what was meant and what is valid.
#include <catch2/catch.hpp>

#include <array>
#include <iterator>
#include <random>

#include "config/policy_json.hpp"
#include "config/suggest.hpp"

using namespace attndev;
using nlohmann::json;
using numerics::Format;
using numerics::PrecisionPolicy;

namespace {

PrecisionPolicy parse_ok(const json& j) {
  PrecisionPolicy p;
  std::string error;
  INFO(j.dump());
  REQUIRE(config::parse_policy(j, p, error));
  return p;
}

std::string parse_error(const json& j) {
  PrecisionPolicy p = numerics::kGoldenPolicy;
  p.fma = false;  // sentinel: a failed parse must not touch the output
  std::string error;
  INFO(j.dump());
  CHECK_FALSE(config::parse_policy(j, p, error));
  CHECK_FALSE(p.fma);
  CHECK_FALSE(error.empty());
  return error;
}

}  // namespace

TEST_CASE("every preset parses by name and serializes to its name", "[policy_json]") {
  int presets = 0;
  for (const numerics::PolicyPreset& preset : numerics::kPolicyPresets) {
    CAPTURE(preset.name);
    const json name = std::string(preset.name);
    CHECK(parse_ok(name) == preset.policy);
    CHECK(config::policy_to_json(preset.policy) == name);
    CHECK(config::policy_label(preset.policy) == preset.name);
    CHECK(parse_ok(json{{"base", preset.name}}) == preset.policy);
    ++presets;
  }
  CHECK(presets >= 9);
}

TEST_CASE("an object overrides stages of its base", "[policy_json]") {
  const PrecisionPolicy p = parse_ok(json::parse(
      R"({"base": "kernel-bf16", "prob": "fp32", "fma": false, "fp8_overflow": "nan"})"));
  PrecisionPolicy expected = numerics::find_preset("kernel-bf16")->policy;
  expected.prob = Format::fp32;
  expected.fma = false;
  expected.fp8_overflow = numerics::Overflow::to_nan;
  CHECK(p == expected);
  const json j = config::policy_to_json(p);
  CHECK(j ==
        json::parse(
            R"({"base": "kernel-bf16", "prob": "fp32", "fma": false, "fp8_overflow": "nan"})"));
  CHECK(config::policy_label(p) == "custom(kernel-bf16+prob=fp32+fma=false+fp8_overflow=nan)");
  // Aliases of parse_format are accepted; without "base" the other stages are fp64.
  const PrecisionPolicy q = parse_ok(json{{"score", "bfloat16"}, {"output", "e4m3"}});
  PrecisionPolicy golden_with = numerics::kGoldenPolicy;
  golden_with.score = Format::bf16;
  golden_with.output = Format::fp8_e4m3;
  CHECK(q == golden_with);
}

TEST_CASE("random custom policies round-trip through JSON", "[policy_json]") {
  const std::uint32_t seed = 20240501;
  CAPTURE(seed);
  std::mt19937 rng(seed);
  constexpr std::array<Format, 7> kFormats = {Format::fp64,    Format::fp32, Format::tf32,
                                              Format::fp16,    Format::bf16, Format::fp8_e4m3,
                                              Format::fp8_e5m2};
  int custom = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    PrecisionPolicy p;
    for (numerics::Stage s : numerics::kAllStages) p.at(s) = kFormats[rng() % kFormats.size()];
    p.fma = rng() % 2;
    p.fp8_overflow = rng() % 2 ? numerics::Overflow::saturate : numerics::Overflow::to_nan;
    p.model = rng() % 2 ? numerics::Model::framework : numerics::Model::kernel;
    // Half the trials: a preset with one or two stages changed, the usual shape of a custom policy.
    if (trial % 2) {
      // A preset without a tensor-core profile: a profile refuses most stage formats (its own
      // test covers those presets).
      do {
        p = numerics::kPolicyPresets[rng() % std::size(numerics::kPolicyPresets)].policy;
      } while (p.mma != numerics::mma::Arch::none);
      p.at(numerics::kAllStages[rng() % 7]) = kFormats[rng() % kFormats.size()];
      if (rng() % 3 == 0) p.fma = !p.fma;
      if (rng() % 4 == 0)
        p.model = p.model == numerics::Model::kernel ? numerics::Model::framework
                                                     : numerics::Model::kernel;
      if (rng() % 5 == 0) {
        constexpr numerics::SoftmaxForm kForms[] = {numerics::SoftmaxForm::fa2,
                                                    numerics::SoftmaxForm::torch_cpu_avx2,
                                                    numerics::SoftmaxForm::torch_cpu_avx512};
        p.softmax = kForms[rng() % std::size(kForms)];
      }
    }
    const json j = config::policy_to_json(p);
    CAPTURE(trial, j.dump());
    custom += j.is_object();
    CHECK(parse_ok(j) == p);
    CHECK(parse_ok(json::parse(j.dump())) == p);  // through text, as a config file carries it
    const json stages = config::policy_stages_json(p);
    // 7 stages, fma, fp8_overflow, model; softmax only where it is not FA-2's and mma only with
    // a tensor-core model (so the stages of every policy without them are what they were before
    // the keys existed; the quant-fp16-sm* presets carry mma).
    CHECK(stages.size() ==
          10u + (p.softmax != numerics::SoftmaxForm::fa2) + (p.mma != numerics::mma::Arch::none));
    CHECK(parse_ok(stages) == p);  // the spelled-out form is a valid policy object too
  }
  CHECK(custom > 1000);
}

TEST_CASE("policy errors name the problem and the valid choices", "[policy_json]") {
  std::string e = parse_error(json{{"base", "kernel-bf16"}, {"probs", "fp32"}});
  CHECK_THAT(e, Catch::Contains("unknown key \"probs\""));
  CHECK_THAT(e, Catch::Contains("did you mean \"prob\""));
  CHECK_THAT(e, Catch::Contains("score_accum"));

  e = parse_error(json{{"base", "kernel-bf16"}, {"score_acum", "fp32"}});
  CHECK_THAT(e, Catch::Contains("did you mean \"score_accum\""));

  e = parse_error(json{{"base", "kernel-bf16"}, {"prob", "bf17"}});
  CHECK_THAT(e, Catch::Contains("\"prob\": unknown format \"bf17\""));
  CHECK_THAT(e, Catch::Contains("fp8-e4m3"));
  CHECK_THAT(e, Catch::Contains("did you mean \"bf16\""));

  e = parse_error("kernel-bf61");
  CHECK_THAT(e, Catch::Contains("unknown policy preset \"kernel-bf61\""));
  CHECK_THAT(e, Catch::Contains("did you mean \"kernel-bf16\""));
  CHECK_THAT(e, Catch::Contains("torch-math-fp16"));

  e = parse_error(json{{"base", "nope"}});
  CHECK_THAT(e, Catch::Contains("\"base\": unknown policy preset \"nope\""));

  CHECK_THAT(parse_error(json{{"fma", "yes"}}), Catch::Contains("\"fma\": must be true or false"));
  CHECK_THAT(parse_error(json{{"fp8_overflow", "inf"}}),
             Catch::Contains("must be \"saturate\" or \"nan\""));
  CHECK_THAT(parse_error(json{{"prob", 16}}), Catch::Contains("a format name is expected"));
  CHECK_THAT(parse_error(json(3.5)), Catch::Contains("a policy is a preset name or an object"));
}

TEST_CASE("did_you_mean suggests only plausible typos", "[suggest]") {
  constexpr std::string_view kNames[] = {"input", "score_accum", "score", "stats",
                                         "prob",  "out_accum",   "output"};
  CHECK(config::edit_distance("prob", "prob") == 0);
  CHECK(config::edit_distance("porb", "prob") == 1);  // a transposition is one edit
  CHECK(config::edit_distance("", "abc") == 3);
  CHECK(config::edit_distance("Stats", "stats") == 0);
  CHECK(config::nearest_name("ouput", kNames) == std::string_view("output"));
  CHECK(config::nearest_name("out_acc", kNames) == std::string_view("out_accum"));
  CHECK_FALSE(config::nearest_name("completely-else", kNames).has_value());
  CHECK(config::did_you_mean("xyzzy", kNames).empty());
  CHECK(config::did_you_mean("scor", kNames) == " (did you mean \"score\"?)");
  CHECK(config::join_names(std::span(kNames).first(3)) == "input, score_accum, score");
}

TEST_CASE("the rounding model is a policy key", "[policy_json]") {
  const PrecisionPolicy f =
      parse_ok(json::parse(R"({"base": "torch-math-bf16", "model": "framework"})"));
  CHECK(f.model == numerics::Model::framework);
  CHECK(f.score == Format::bf16);
  CHECK(config::policy_label(f) == "custom(torch-math-bf16+model=framework)");
  CHECK(parse_ok(json("framework-bf16")).model == numerics::Model::framework);
  CHECK(parse_ok(json::parse(R"({"base": "framework-bf16", "model": "kernel"})")).model ==
        numerics::Model::kernel);
  const std::string e = parse_error(json{{"base", "kernel-bf16"}, {"model", "pytorch"}});
  CHECK_THAT(e, Catch::Contains("\"model\""));
  CHECK_THAT(e, Catch::Contains("\"kernel\""));
  CHECK_THAT(e, Catch::Contains("\"framework\""));
}

TEST_CASE("the softmax form is a policy key", "[policy_json]") {
  const PrecisionPolicy t =
      parse_ok(json::parse(R"({"base": "kernel-bf16", "softmax": "torch-cpu-avx2"})"));
  CHECK(t.softmax == numerics::SoftmaxForm::torch_cpu_avx2);
  CHECK(t == numerics::find_preset("torch-cpu-flash-bf16")->policy);
  CHECK(config::policy_to_json(t) == json("torch-cpu-flash-bf16"));
  const PrecisionPolicy back =
      parse_ok(json::parse(R"({"base": "torch-cpu-flash-fp16", "softmax": "fa2"})"));
  CHECK(back == numerics::find_preset("kernel-fp16")->policy);
  CHECK(config::policy_stages_json(t)["softmax"] == "torch-cpu-avx2");
  CHECK_FALSE(config::policy_stages_json(back).contains("softmax"));
  const PrecisionPolicy wide =
      parse_ok(json::parse(R"({"base": "kernel-fp16", "softmax": "torch-cpu-avx512"})"));
  CHECK(wide.softmax == numerics::SoftmaxForm::torch_cpu_avx512);
  CHECK(wide == numerics::find_preset("torch-cpu-flash-avx512-fp16")->policy);
  CHECK(config::policy_to_json(wide) == json("torch-cpu-flash-avx512-fp16"));
  CHECK(config::policy_stages_json(wide)["softmax"] == "torch-cpu-avx512");
  const std::string e = parse_error(json{{"base", "kernel-bf16"}, {"softmax", "avx512"}});
  CHECK_THAT(e, Catch::Contains("\"softmax\""));
  CHECK_THAT(e, Catch::Contains("\"torch-cpu-avx2\""));
  CHECK_THAT(e, Catch::Contains("\"torch-cpu-avx512\""));
}
