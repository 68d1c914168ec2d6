// The tensor-core profile in policy JSON ("mma"): parsed, written back only when set (every
// existing policy serializes as before), and refused by name when the architecture has no
// instruction for the policy's formats or the accumulators are not fp32.
#include <catch2/catch.hpp>

#include <string>

#include "config/policy_json.hpp"

using namespace attndev;
using nlohmann::json;
using numerics::PrecisionPolicy;
using numerics::mma::Arch;

namespace {

std::string mma_error(const json& j) {
  PrecisionPolicy p = numerics::kGoldenPolicy;
  std::string error;
  INFO(j.dump());
  CHECK_FALSE(config::parse_policy(j, p, error));
  CHECK(p == numerics::kGoldenPolicy);  // untouched
  return error;
}

}  // namespace

TEST_CASE("policy JSON: \"mma\" names the tensor cores and round-trips", "[policy_json][mma]") {
  PrecisionPolicy p;
  std::string error;
  REQUIRE(config::parse_policy(json{{"base", "kernel-bf16"}, {"mma", "sm90"}}, p, error));
  CHECK(p.mma == Arch::sm90);
  PrecisionPolicy without = p;
  without.mma = Arch::none;
  CHECK(without == numerics::find_preset("kernel-bf16")->policy);
  const json back = config::policy_to_json(p);
  CHECK(back == json{{"base", "kernel-bf16"}, {"mma", "sm90"}});
  CHECK(config::policy_label(p) == "custom(kernel-bf16+mma=sm90)");
  CHECK(config::policy_stages_json(p).at("mma") == "sm90");
  PrecisionPolicy again;
  REQUIRE(config::parse_policy(back, again, error));
  CHECK(again == p);
  // fp8 inputs on an architecture with fp8 tensor cores; "none" is the default.
  REQUIRE(config::parse_policy(json{{"base", "fp8-e4m3"}, {"mma", "sm89"}}, p, error));
  CHECK(p.mma == Arch::sm89);
  REQUIRE(config::parse_policy(json{{"base", "kernel-fp16"}, {"mma", "none"}}, p, error));
  CHECK(p == numerics::find_preset("kernel-fp16")->policy);
  // Without "mma" nothing about it is written: the provenance of every earlier policy is as
  // it was.
  // (The quant-fp16-sm* presets carry a profile: theirs is written.)
  for (const numerics::PolicyPreset& preset : numerics::kPolicyPresets) {
    INFO(preset.name);
    CHECK(config::policy_stages_json(preset.policy).contains("mma") ==
          (preset.policy.mma != Arch::none));
  }
}

TEST_CASE("policy JSON: a tensor-core profile that cannot run the policy is refused by name",
          "[policy_json][mma]") {
  // fp8 before sm_89: the profiles that have it are named.
  const std::string fp8 = mma_error(json{{"base", "fp8-e4m3"}, {"mma", "sm80"}});
  CHECK(fp8.find("sm80") != std::string::npos);
  CHECK(fp8.find("fp8") != std::string::npos);
  CHECK(fp8.find("profiles that do: sm89, sm90, sm100") != std::string::npos);
  // The accumulators must be fp32 (the matrix unit's).
  const std::string acc =
      mma_error(json{{"base", "working-bf16"}, {"out_accum", "fp16"}, {"mma", "sm90"}});
  CHECK(acc.find("out_accum") != std::string::npos);
  // Operands no instruction multiplies: fp64 inputs; P in fp16 with V in bf16.
  CHECK(mma_error(
            json{{"base", "fp64"}, {"score_accum", "fp32"}, {"out_accum", "fp32"}, {"mma", "sm90"}})
            .find("no tensor-core instruction multiplies fp64") != std::string::npos);
  CHECK(mma_error(json{{"base", "kernel-bf16"}, {"prob", "fp16"}, {"mma", "sm90"}})
            .find("fp16 by bf16") != std::string::npos);
  // Unknown architectures.
  const std::string unknown = mma_error(json{{"base", "kernel-bf16"}, {"mma", "sm91"}});
  CHECK(unknown.find("none, sm80, sm89, sm90, sm100") != std::string::npos);
  CHECK(unknown.find("did you mean") != std::string::npos);
  mma_error(json{{"base", "kernel-bf16"}, {"mma", 90}});
}
