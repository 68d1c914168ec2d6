#include "experiment/attribution.hpp"

#include <algorithm>
#include <stdexcept>

#include "config/policy_json.hpp"

namespace attndev::experiment {

using numerics::Format;
using numerics::Stage;

std::vector<StageSpec> attribution_specs(attention::Algorithm algorithm,
                                         const numerics::PrecisionPolicy& policy) {
  std::vector<StageSpec> specs = {StageSpec{}};
  for (Stage s : numerics::kAllStages)
    if (s != Stage::input && policy[s] != Format::fp64) specs.push_back({StageMode::only, {s}});
  const auto add = [&specs](StageSpec spec) {
    if (std::find(specs.begin(), specs.end(), spec) == specs.end()) specs.push_back(spec);
  };
  for (Stage s : numerics::kAllStages) {
    if (policy[s] == kRaiseFormat || !format_fits(policy[s], kRaiseFormat)) continue;
    add({StageMode::raise, {s}});
    const std::vector<Stage> group = coupled_raise(algorithm, policy, s);
    if (group.size() > 1) add({StageMode::raise, group});
  }
  return specs;
}

nlohmann::ordered_json attribution_config(const AttributionRequest& r) {
  const std::string algorithm = attention::algorithm_name(r.algorithm);
  const std::string label = config::policy_label(r.parsed_policy);
  if (algorithm == r.reference_algorithm && !r.reference_policy)
    throw std::invalid_argument("the reference is " + algorithm +
                                " under each row's policy, the algorithm itself: " +
                                "give the reference another algorithm or a fixed policy");
  using Json = nlohmann::ordered_json;
  Json stages = Json::array();
  for (const StageSpec& spec : attribution_specs(r.algorithm, r.parsed_policy))
    stages.push_back(spec.text());
  Json axes = r.axes;
  axes["stage"] = stages;

  Json subject = {{"name", algorithm + " {stage}"},
                  {"algorithm", algorithm},
                  {"policy", r.policy},
                  {"stage", "{stage}"}};
  Json reference = Json::object();
  reference["name"] = r.reference_policy ? "reference " + r.reference_algorithm
                                         : r.reference_algorithm + " {stage}";
  reference["algorithm"] = r.reference_algorithm;
  reference["policy"] = r.reference_policy ? Json(*r.reference_policy) : Json(r.policy);
  if (!r.reference_policy) reference["stage"] = "{stage}";
  subject["ratio_to"] = reference["name"];

  Json cfg;
  cfg["name"] = "attribute-" + algorithm + "-" + label;
  cfg["description"] =
      "Which stage causes " + algorithm + "'s deviation under " + label +
      ": the policy as it is, each stage alone in the policy's format (the rest fp64) and each "
      "stage raised to fp32 (coupled stages together), against " +
      r.reference_algorithm +
      (r.reference_policy ? " under a fixed policy" : " under each row's policy") +
      " (written by attndev attribute)";
  cfg["axes"] = axes;
  cfg["trials"] = r.trials;
  cfg["metrics"] = Json::array({r.metric});
  cfg["variants"] = Json::array({subject, reference});
  return cfg;
}

}  // namespace attndev::experiment
