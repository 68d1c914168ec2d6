// Precision policies in JSON: a preset name, or an object of stages over a base preset.
//
//   "kernel-bf16"
//   {"base": "kernel-bf16", "prob": "fp32", "fma": false, "fp8_overflow": "saturate"}
//
// Stage keys are the stage names of numerics/policy.hpp; formats any name parse_format accepts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "numerics/policy.hpp"

namespace attndev::config {

// On failure returns false and sets `error` to a message relative to the policy value (e.g.
// "unknown stage \"probs\" (did you mean \"prob\"?)"); the caller prefixes the JSON path.
bool parse_policy(const nlohmann::json& value, numerics::PrecisionPolicy& out, std::string& error);

// Canonical form: the preset name when the policy equals a preset, else an object with "base"
// (the nearest preset) and the stages that differ. parse_policy(policy_to_json(p)) == p.
nlohmann::json policy_to_json(const numerics::PrecisionPolicy& policy);

// Every stage spelled out, for provenance: {"input": "bf16", ..., "fma": true, ...}.
nlohmann::json policy_stages_json(const numerics::PrecisionPolicy& policy);

// Short human label: the preset name or "custom(base+prob=fp32)".
std::string policy_label(const numerics::PrecisionPolicy& policy);

}  // namespace attndev::config
