#include "config/policy_json.hpp"

#include <vector>

#include "config/keys.hpp"
#include "config/suggest.hpp"

namespace attndev::config {

namespace {

using numerics::Format;
using numerics::Overflow;
using numerics::PrecisionPolicy;
using numerics::Stage;

constexpr std::string_view kFmaKey = "fma";
constexpr std::string_view kOverflowKey = "fp8_overflow";
constexpr std::string_view kModelKey = "model";
constexpr std::string_view kSoftmaxKey = "softmax";
constexpr std::string_view kMmaKey = "mma";
constexpr std::string_view kBaseKey = "base";

std::vector<std::string_view> object_keys() {
  std::vector<std::string_view> keys = {kBaseKey};
  for (Stage s : numerics::kAllStages) keys.push_back(numerics::stage_name(s));
  keys.push_back(kFmaKey);
  keys.push_back(kOverflowKey);
  keys.push_back(kModelKey);
  keys.push_back(kSoftmaxKey);
  keys.push_back(kMmaKey);
  return keys;
}

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> names;
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets) names.push_back(p.name);
  return names;
}

std::vector<std::string_view> format_names() {
  std::vector<std::string_view> names;
  for (Format f : numerics::kAllFormats) names.push_back(numerics::format_name(f));
  return names;
}

// Only saturate and nan are offered: e4m3 has no infinity to overflow to.
const char* overflow_name(Overflow o) {
  switch (o) {
    case Overflow::saturate:
      return "saturate";
    case Overflow::to_nan:
      return "nan";
    case Overflow::to_inf:
      return "inf";
  }
  return "?";
}

std::string type_of(const nlohmann::json& v) {
  return v.type_name();
}

bool parse_preset(const nlohmann::json& value, PrecisionPolicy& out, std::string& error) {
  if (!value.is_string()) {
    error = "preset must be a string, got " + type_of(value);
    return false;
  }
  const std::string name = value.get<std::string>();
  if (const numerics::PolicyPreset* p = numerics::find_preset(name)) {
    out = p->policy;
    return true;
  }
  const auto names = preset_names();
  error = "unknown policy preset \"" + name + "\"" + did_you_mean(name, names) +
          "; presets: " + join_names(names);
  return false;
}

// How many fields differ: the distance used to pick the canonical base of a custom policy.
int difference(const PrecisionPolicy& a, const PrecisionPolicy& b) {
  int n = 0;
  for (Stage s : numerics::kAllStages) n += a[s] != b[s];
  return n + (a.fma != b.fma) + (a.fp8_overflow != b.fp8_overflow) + (a.model != b.model) +
         (a.softmax != b.softmax) + (a.mma != b.mma);
}

const numerics::PolicyPreset& nearest_preset(const PrecisionPolicy& policy) {
  const numerics::PolicyPreset* best = &numerics::kPolicyPresets[0];
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets)
    if (difference(p.policy, policy) < difference(best->policy, policy)) best = &p;
  return *best;
}

}  // namespace

bool parse_policy(const nlohmann::json& value, PrecisionPolicy& out, std::string& error) {
  if (value.is_string()) return parse_preset(value, out, error);
  if (!value.is_object()) {
    error =
        "a policy is a preset name or an object {\"base\": preset, <stage>: format, \"model\": "
        "\"kernel\"|\"framework\", ...}, got " +
        type_of(value);
    return false;
  }
  // Without "base" the unnamed stages are fp64: a fully spelled-out policy needs no preset.
  PrecisionPolicy policy = numerics::kGoldenPolicy;
  if (const auto it = value.find(kBaseKey); it != value.end()) {
    if (!parse_preset(*it, policy, error)) {
      error = "\"base\": " + error;
      return false;
    }
  }
  const auto keys = object_keys();
  std::string bad_key;
  if (std::string message = unknown_key_message(value, keys, bad_key); !message.empty()) {
    error = std::move(message);
    return false;
  }
  for (const auto& [key, v] : value.items()) {
    if (key == kBaseKey || is_comment_key(key)) continue;
    if (key == kFmaKey) {
      if (!v.is_boolean()) {
        error = "\"fma\": must be true or false, got " + type_of(v);
        return false;
      }
      policy.fma = v.get<bool>();
      continue;
    }
    if (key == kOverflowKey) {
      const std::string o = v.is_string() ? v.get<std::string>() : std::string();
      if (o == "saturate") {
        policy.fp8_overflow = Overflow::saturate;
      } else if (o == "nan") {
        policy.fp8_overflow = Overflow::to_nan;
      } else {
        error = "\"fp8_overflow\": must be \"saturate\" or \"nan\", got " + v.dump();
        return false;
      }
      continue;
    }
    if (key == kModelKey) {
      const std::string m = v.is_string() ? v.get<std::string>() : std::string();
      if (m == "kernel") {
        policy.model = numerics::Model::kernel;
      } else if (m == "framework") {
        policy.model = numerics::Model::framework;
      } else {
        error =
            "\"model\": must be \"kernel\" (each op rounded once, to its stage's format) or "
            "\"framework\" (each op computed in fp32, its output stored in its stage's "
            "format), got " +
            v.dump();
        return false;
      }
      continue;
    }
    if (key == kSoftmaxKey) {
      const std::string f = v.is_string() ? v.get<std::string>() : std::string();
      if (f == numerics::softmax_form_name(numerics::SoftmaxForm::fa2)) {
        policy.softmax = numerics::SoftmaxForm::fa2;
      } else if (f == numerics::softmax_form_name(numerics::SoftmaxForm::torch_cpu_avx2)) {
        policy.softmax = numerics::SoftmaxForm::torch_cpu_avx2;
      } else if (f == numerics::softmax_form_name(numerics::SoftmaxForm::torch_cpu_avx512)) {
        policy.softmax = numerics::SoftmaxForm::torch_cpu_avx512;
      } else {
        error =
            "\"softmax\": must be \"fa2\" (FA-2's exp2 form), \"torch-cpu-avx2\" or "
            "\"torch-cpu-avx512\" (PyTorch's CPU flash kernel built for AVX2 or AVX-512: "
            "exp_u20 over 8 or 16 lanes, lane-wise row sums), got " +
            v.dump();
        return false;
      }
      continue;
    }
    if (key == kMmaKey) {
      const std::string m = v.is_string() ? v.get<std::string>() : std::string();
      if (!numerics::mma::parse_arch(m, policy.mma)) {
        std::vector<std::string_view> names = {"none"};
        for (numerics::mma::Arch a : numerics::mma::kAllArchs)
          names.push_back(numerics::mma::arch_name(a));
        error = "\"mma\": the tensor cores whose arithmetic the GEMMs run on must be one of " +
                join_names(names) + ", got " + v.dump() + (m.empty() ? "" : did_you_mean(m, names));
        return false;
      }
      continue;
    }
    const Stage* stage = nullptr;
    for (const Stage& s : numerics::kAllStages)
      if (key == numerics::stage_name(s)) stage = &s;  // found: unknown keys were refused above
    const auto formats = format_names();
    if (!v.is_string()) {
      error = "\"" + key + "\": a format name is expected (" + join_names(formats) + "), got " +
              type_of(v);
      return false;
    }
    const std::string name = v.get<std::string>();
    Format f;
    if (!numerics::parse_format(name, f)) {
      error = "\"" + key + "\": unknown format \"" + name + "\"" + did_you_mean(name, formats) +
              "; valid formats: " + join_names(formats);
      return false;
    }
    if (!numerics::is_stage_format(f)) {
      error = "\"" + key + "\": " + numerics::format_name(f) +
              " is an element or scale format of quantization recipes, not a stage format (use "
              "a quantized algorithm such as sage2-8b or mxfp8, `attndev list algorithms`); "
              "stage formats: " +
              join_names(formats);
      return false;
    }
    policy.at(*stage) = f;
  }
  // Checked on the whole policy: the stages named after "mma" count too.
  if (std::string e = numerics::mma_policy_error(policy); !e.empty()) {
    error = std::move(e);
    return false;
  }
  out = policy;
  return true;
}

nlohmann::json policy_to_json(const PrecisionPolicy& policy) {
  const numerics::PolicyPreset& base = nearest_preset(policy);
  if (base.policy == policy) return std::string(base.name);
  nlohmann::json j = nlohmann::json::object();
  j[std::string(kBaseKey)] = std::string(base.name);
  for (Stage s : numerics::kAllStages)
    if (policy[s] != base.policy[s]) j[numerics::stage_name(s)] = numerics::format_name(policy[s]);
  if (policy.fma != base.policy.fma) j[std::string(kFmaKey)] = policy.fma;
  if (policy.fp8_overflow != base.policy.fp8_overflow)
    j[std::string(kOverflowKey)] = overflow_name(policy.fp8_overflow);
  if (policy.model != base.policy.model)
    j[std::string(kModelKey)] = numerics::model_name(policy.model);
  if (policy.softmax != base.policy.softmax)
    j[std::string(kSoftmaxKey)] = numerics::softmax_form_name(policy.softmax);
  if (policy.mma != base.policy.mma) j[std::string(kMmaKey)] = numerics::mma::arch_name(policy.mma);
  return j;
}

nlohmann::json policy_stages_json(const PrecisionPolicy& policy) {
  nlohmann::json j = nlohmann::json::object();
  for (Stage s : numerics::kAllStages)
    j[numerics::stage_name(s)] = numerics::format_name(policy[s]);
  j[std::string(kFmaKey)] = policy.fma;
  j[std::string(kOverflowKey)] = overflow_name(policy.fp8_overflow);
  j[std::string(kModelKey)] = numerics::model_name(policy.model);
  // Only where it is not FA-2's: the stages of every earlier policy stay as they were.
  if (policy.softmax != numerics::SoftmaxForm::fa2)
    j[std::string(kSoftmaxKey)] = numerics::softmax_form_name(policy.softmax);
  // Likewise only with a tensor-core model.
  if (policy.mma != numerics::mma::Arch::none)
    j[std::string(kMmaKey)] = numerics::mma::arch_name(policy.mma);
  return j;
}

std::string policy_label(const PrecisionPolicy& policy) {
  const numerics::PolicyPreset& base = nearest_preset(policy);
  if (base.policy == policy) return std::string(base.name);
  std::string label = "custom(" + std::string(base.name);
  for (Stage s : numerics::kAllStages)
    if (policy[s] != base.policy[s])
      label += std::string("+") + numerics::stage_name(s) + "=" + numerics::format_name(policy[s]);
  if (policy.fma != base.policy.fma) label += policy.fma ? "+fma=true" : "+fma=false";
  if (policy.fp8_overflow != base.policy.fp8_overflow)
    label += std::string("+fp8_overflow=") + overflow_name(policy.fp8_overflow);
  if (policy.model != base.policy.model)
    label += std::string("+model=") + numerics::model_name(policy.model);
  if (policy.softmax != base.policy.softmax)
    label += std::string("+softmax=") + numerics::softmax_form_name(policy.softmax);
  if (policy.mma != base.policy.mma)
    label += std::string("+mma=") + numerics::mma::arch_name(policy.mma);
  return label + ")";
}

}  // namespace attndev::config
