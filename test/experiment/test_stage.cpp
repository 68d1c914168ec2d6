// Stage overrides (experiment/spec/stage.hpp): the text forms, what they do to a policy, and the
// claim `attndev attribute` prints most prominently: that an override cannot change a bit. Every
// such claim, for every algorithm it is made for and every preset, is run through the emulator
// here and must leave every output element as it was; the coupled groups it proposes instead
// must change something.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "experiment/spec/stage.hpp"
#include "numerics/policy.hpp"

namespace stage_test {

using attndev::attention::Algorithm;
using attndev::experiment::apply_stage_spec;
using attndev::experiment::coupled_raise;
using attndev::experiment::format_fits;
using attndev::experiment::parse_stage_spec;
using attndev::experiment::stage_no_effect;
using attndev::experiment::StageMode;
using attndev::experiment::StageSpec;
using attndev::numerics::Format;
using attndev::numerics::PrecisionPolicy;
using attndev::numerics::Stage;

StageSpec parsed(const std::string& text) {
  StageSpec spec;
  std::string error;
  INFO(text);
  REQUIRE(parse_stage_spec(text, spec, error));
  return spec;
}

std::string refusal(const std::string& text) {
  StageSpec spec;
  std::string error;
  CHECK_FALSE(parse_stage_spec(text, spec, error));
  return error;
}

PrecisionPolicy preset(const char* name) {
  const auto* p = attndev::numerics::find_preset(name);
  REQUIRE(p != nullptr);
  return p->policy;
}

// d = 48: the scale 1/sqrt(48) is not a power of two, so multiplying by it rounds (a claim that
// held only because the scale is exact would fail here); N = 75 with 16-wide tiles leaves a
// partial block.
attndev::attention::Inputs inputs(Format input, unsigned seed) {
  constexpr int kN = 75, kD = 48;
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  attndev::attention::Inputs in{{1, 1, kN, kD}, {1, 1, kN, kD}, {1, 1, kN, kD}};
  for (auto* t : {&in.q, &in.k, &in.v})
    for (double& x : t->data) x = attndev::numerics::round_to(input, normal(gen));
  return in;
}

std::vector<double> output(Algorithm a, const PrecisionPolicy& policy,
                           const attndev::attention::Inputs& in) {
  attndev::attention::Options options;
  options.block_r = 16;
  options.block_c = 16;
  options.threads = 1;
  return attndev::attention::run(a, policy, in, options).o.data;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace stage_test

using namespace stage_test;

TEST_CASE("stage specs parse to their canonical text and refuse what they cannot mean", "[stage]") {
  CHECK(parsed("none").text() == "none");
  CHECK(parsed("none").stages.empty());
  CHECK(parsed("raise:score").text() == "raise:score");
  // Stages are kept in the policy's order, whatever order they were written in.
  CHECK(parsed("raise:score+score_accum").text() == "raise:score_accum+score");
  CHECK(parsed("only:output+input+prob").text() == "only:input+prob+output");
  CHECK(parsed("only:prob").mode == StageMode::only);

  CHECK(refusal("raise:scroe").find("did you mean \"score\"") != std::string::npos);
  CHECK(refusal("rise:score").find("did you mean \"raise\"") != std::string::npos);
  CHECK(refusal("raise:").find("an empty stage name") != std::string::npos);
  CHECK(refusal("raise:score+score").find("named twice") != std::string::npos);
  CHECK(refusal("score").find("\"none\", \"only:") != std::string::npos);
}

TEST_CASE("only keeps the named stages and makes the rest fp64, raise moves narrower ones to fp32",
          "[stage]") {
  const PrecisionPolicy kernel = preset("kernel-bf16");
  const PrecisionPolicy only_prob = apply_stage_spec(kernel, parsed("only:prob"));
  // The inputs stay bf16: every row of an attribution measures the same rounded data.
  for (Stage s : attndev::numerics::kAllStages)
    CHECK(only_prob[s] == (s == Stage::prob || s == Stage::input ? Format::bf16 : Format::fp64));
  CHECK(only_prob.model == kernel.model);

  const PrecisionPolicy framework = preset("framework-bf16");
  const PrecisionPolicy raised = apply_stage_spec(framework, parsed("raise:stats+prob"));
  CHECK(raised.stats == Format::fp32);
  CHECK(raised.prob == Format::fp32);
  CHECK(raised.score == Format::bf16);
  CHECK(raised.model == attndev::numerics::Model::framework);
  // fp64 is never lowered to fp32; a stage already fp32 stays.
  CHECK(apply_stage_spec(preset("fp64"), parsed("raise:score")) == preset("fp64"));
  CHECK(apply_stage_spec(kernel, parsed("raise:stats")) == kernel);
  CHECK(apply_stage_spec(kernel, parsed("none")) == kernel);
}

TEST_CASE("format_fits: every value of the first format is a value of the second", "[stage]") {
  CHECK(format_fits(Format::bf16, Format::fp32));
  CHECK(format_fits(Format::fp16, Format::fp32));
  CHECK(format_fits(Format::tf32, Format::fp32));
  CHECK(format_fits(Format::fp8_e4m3, Format::fp16));
  CHECK(format_fits(Format::bf16, Format::bf16));
  CHECK_FALSE(format_fits(Format::fp32, Format::bf16));
  CHECK_FALSE(format_fits(Format::bf16, Format::fp16));  // range
  CHECK_FALSE(format_fits(Format::fp16, Format::bf16));  // precision
  CHECK_FALSE(format_fits(Format::fp16, Format::fp8_e4m3));
}

TEST_CASE("every override called a no-op leaves every output bit of the emulator as it was",
          "[stage]") {
  std::vector<StageSpec> specs;
  for (Stage s : attndev::numerics::kAllStages) {
    specs.push_back({StageMode::raise, {s}});
    specs.push_back({StageMode::only, {s}});
  }
  int claims = 0, changes = 0;
  for (const auto& p : attndev::numerics::kPolicyPresets) {
    for (Algorithm a : {Algorithm::baseline, Algorithm::flash1, Algorithm::flash2}) {
      const auto in = inputs(p.policy.input, 7);
      const std::vector<double> base = output(a, p.policy, in);
      for (const StageSpec& spec : specs) {
        const std::string why = stage_no_effect(a, p.policy, spec);
        if (why.empty() || spec.mode != StageMode::raise) continue;
        INFO(attndev::attention::algorithm_name(a)
             << " under " << p.name << ", " << spec.text() << ": " << why);
        CHECK(same_bits(output(a, apply_stage_spec(p.policy, spec), in), base));
        ++claims;
        // The group that moves the stage with its feeder reaches the output.
        const StageSpec group{StageMode::raise, coupled_raise(a, p.policy, spec.stages[0])};
        if (group.stages.size() > 1) {
          CHECK(stage_no_effect(a, p.policy, group).empty());
          changes += !same_bits(output(a, apply_stage_spec(p.policy, group), in), base);
        }
      }
    }
  }
  // The claims of the seven stages over 15 presets and 3 algorithms: far more than a handful;
  // a stage_no_effect that said nothing would pass the loop above vacuously.
  CHECK(claims > 100);
  CHECK(changes > 10);
}

TEST_CASE("raising a stage whose feeder still rounds is named, with the group that reaches O",
          "[stage]") {
  const PrecisionPolicy framework = preset("framework-bf16");
  CHECK(stage_no_effect(Algorithm::flash1, framework, parsed("raise:score")) ==
        "score rounds only values of score_accum, which are bf16 already");
  CHECK(coupled_raise(Algorithm::flash1, framework, Stage::score) ==
        std::vector<Stage>{Stage::score_accum, Stage::score});
  CHECK(coupled_raise(Algorithm::flash2, framework, Stage::output) ==
        std::vector<Stage>{Stage::out_accum, Stage::output});
  CHECK(coupled_raise(Algorithm::flash1, framework, Stage::prob) ==
        std::vector<Stage>{Stage::stats, Stage::prob});
  // The baseline's P is e / l in the softmax's fp32 compute format: raising P alone matters.
  CHECK(stage_no_effect(Algorithm::baseline, framework, parsed("raise:prob")).empty());
  CHECK(coupled_raise(Algorithm::baseline, framework, Stage::prob) ==
        std::vector<Stage>{Stage::prob});
  // Under kernel-bf16 the accumulators are fp32 already: nothing to raise, and said so.
  CHECK(stage_no_effect(Algorithm::flash2, preset("kernel-bf16"), parsed("raise:stats")) ==
        "stats is fp32 already");
  CHECK(stage_no_effect(Algorithm::flash2, preset("kernel-bf16"), parsed("raise:prob")).empty());
  // only: a stage that is fp64 under the policy isolates nothing.
  CHECK(stage_no_effect(Algorithm::flash2, preset("fp64"), parsed("only:prob")) ==
        "prob is fp64 under this policy");
  // No claim where the model has none: fp8 algorithms, and P's format choosing PyTorch's CPU exp.
  CHECK(stage_no_effect(Algorithm::flash3_fp8, framework, parsed("raise:score")).empty());
  PrecisionPolicy torch_cpu = preset("torch-cpu-flash-bf16");
  torch_cpu.stats = Format::bf16;
  CHECK(stage_no_effect(Algorithm::flash2, torch_cpu, parsed("raise:prob")).empty());
}
