// The one key rule: unknown keys are refused with the nearest valid key, '_' keys are comments,
// and the experiment and training configs (both through lib/config) agree on both.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/keys.hpp"
#include "config/policy_json.hpp"
#include "experiment/spec/config.hpp"
#include "train/train_config.hpp"

using namespace attndev;
using nlohmann::json;

namespace {

constexpr std::string_view kKeys[] = {"name", "trials", "variants"};

std::string error_of(const json& j, std::string_view path) {
  try {
    config::check_keys(j, path, kKeys);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("check_keys refuses unknown keys naming the path and the nearest key", "[config][keys]") {
  CHECK(error_of(json{{"name", 1}, {"trials", 2}}, "").empty());
  const std::string e = error_of(json{{"name", 1}, {"trails", 2}}, "top");
  CHECK_THAT(e, Catch::StartsWith("top.trails: unknown key \"trails\""));
  CHECK_THAT(e, Catch::Contains("(did you mean \"trials\"?)"));
  CHECK_THAT(e, Catch::Contains("valid keys: name, trials, variants"));
  CHECK_THAT(error_of(json::array(), "runs[0]"), Catch::Contains("runs[0]: expected an object"));
  CHECK_THAT(error_of(json(3), ""), Catch::Contains("(top level): expected an object"));
}

TEST_CASE("keys starting with an underscore are comments everywhere", "[config][keys]") {
  CHECK(config::is_comment_key("_comment"));
  CHECK(config::is_comment_key("_"));
  CHECK_FALSE(config::is_comment_key("comment_"));
  CHECK_FALSE(config::is_comment_key(""));
  CHECK(error_of(json{{"_comment", "why"}, {"_smoke", {1, 2}}, {"name", "x"}}, "").empty());
}

TEST_CASE("experiment and train configs accept the same comment keys and refuse the same typos",
          "[config][keys]") {
  const json experiment_config = {
      {"_comment", "a note"},
      {"name", "x"},
      {"axes", {{"seq_len", 64}, {"_why", "short"}}},
      {"variants", {{{"algorithm", "flash2"}, {"policy", "fp32"}, {"_note", "n"}}}}};
  CHECK_NOTHROW(experiment::parse_config(experiment_config.dump()));
  const json train_config = {{"_comment", "a note"},
                             {"name", "t"},
                             {"steps", 2},
                             {"model", {{"d_model", 16}, {"heads", 2}, {"_why", "tiny"}}},
                             {"attention", {{"algorithm", "flash2"}, {"_n", 1}}}};
  CHECK_NOTHROW(train::parse_train_config(train_config));

  json bad_experiment = experiment_config;
  bad_experiment["trails"] = 3;
  json bad_train = train_config;
  bad_train["stpes"] = 3;
  std::string e1, e2;
  try {
    experiment::parse_config(bad_experiment.dump());
  } catch (const config::ConfigError& e) {
    e1 = e.message();
  }
  try {
    train::parse_train_config(bad_train);
  } catch (const config::ConfigError& e) {
    e2 = e.message();
  }
  CHECK_THAT(e1, Catch::StartsWith("unknown key \"trails\" (did you mean \"trials\"?)"));
  CHECK_THAT(e2, Catch::StartsWith("unknown key \"stpes\" (did you mean \"steps\"?)"));
  CHECK_THAT(e2, Catch::EndsWith("(keys starting with _ are comments)"));
}

TEST_CASE("policy objects follow the same key rule", "[config][keys]") {
  // The policy parser is not a third checker: a comment key passes, a typo is named.
  numerics::PrecisionPolicy p;
  std::string error;
  CHECK(config::parse_policy(json{{"base", "kernel-bf16"}, {"_why", "p in fp32"}, {"prob", "fp32"}},
                             p, error));
  CHECK(p.prob == numerics::Format::fp32);
  CHECK_FALSE(config::parse_policy(json{{"base", "kernel-bf16"}, {"porb", "fp32"}}, p, error));
  CHECK_THAT(error, Catch::StartsWith("unknown key \"porb\" (did you mean \"prob\"?)"));
}
