// `attndev attribute`'s experiment: for an algorithm under a policy, the config that runs the
// policy as it is, each stage alone in the policy's format (the rest fp64) and each stage raised
// to fp32 (leave-one-out, coupled stages moved together), for the algorithm and its reference,
// over the given axes and trials. The config is an ordinary one (a `stage` variant axis,
// experiment/spec/stage.hpp): `attndev run` runs it, and its summary.md is the attribution
// table (experiment/results/attribution_table.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "experiment/spec/stage.hpp"
#include "numerics/policy.hpp"

namespace attndev::experiment {

struct AttributionRequest {
  attention::Algorithm algorithm = attention::Algorithm::flash2;
  nlohmann::json policy;  // as the user wrote it: a preset name or a policy object
  numerics::PrecisionPolicy parsed_policy;
  std::string reference_algorithm = "baseline";
  // The reference's policy when it is fixed; nullopt: the reference runs each row's policy.
  std::optional<nlohmann::json> reference_policy;
  nlohmann::ordered_json axes = nlohmann::ordered_json::object();  // point axes, as in a config
  nlohmann::ordered_json trials = 1;                               // as a config writes them
  std::string metric = "max_abs";
};

// The overrides attribute runs for `algorithm` under `policy`, in table order: none; only:S for
// every stage the policy has narrower than fp64 but the input (the golden sees the same rounded
// inputs, so that row would show nothing); raise:S for every stage narrower than fp32, those that
// cannot change a bit included (the run then shows they did not), and each coupled group.
std::vector<StageSpec> attribution_specs(attention::Algorithm algorithm,
                                         const numerics::PrecisionPolicy& policy);

// The config, ready for parse_config. Throws std::invalid_argument when the subject and its
// reference would be the same variant.
nlohmann::ordered_json attribution_config(const AttributionRequest& request);

}  // namespace attndev::experiment
