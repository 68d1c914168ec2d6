// A training run refuses the tensor-core model for its attention (the backward's GEMMs have no
// model), saying where it may be used instead; the same policy parses as a shadow (forward only).
#include <catch2/catch.hpp>

#include <string>

#include "config/error.hpp"
#include "train/train_config.hpp"

using namespace attndev;
using nlohmann::json;

namespace {

json train_json(const json& attention_policy, const json& shadows) {
  return {
      {"name", "mma"},
      {"steps", 2},
      {"batch", 2},
      {"seed", 1},
      {"precision", "fp32"},
      {"attention", {{"algorithm", "flash2"}, {"policy", attention_policy}}},
      {"model", {{"d_model", 16}, {"heads", 2}, {"layers", 1}, {"context", 8}, {"mlp_hidden", 16}}},
      {"shadow", shadows}};
}

}  // namespace

TEST_CASE("training refuses \"mma\" for the trained attention, accepts it in a shadow",
          "[train][mma]") {
  const json tc = {{"base", "kernel-bf16"}, {"mma", "sm90"}};
  std::string message;
  try {
    train::parse_train_config(train_json(tc, json::array()));
  } catch (const config::ConfigError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("covers the forward pass only") &&
                          Catch::Contains("attention.policy"));
  const train::TrainConfig ok = train::parse_train_config(
      train_json("kernel-bf16", json::array({{{"algorithm", "flash2"}, {"policy", tc}}})));
  REQUIRE(ok.shadows.size() == 1);
  CHECK(ok.shadows[0].policy.mma == numerics::mma::Arch::sm90);
}
