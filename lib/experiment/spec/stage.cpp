#include "experiment/spec/stage.hpp"

#include <algorithm>

#include "config/suggest.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

using numerics::Format;
using numerics::PrecisionPolicy;
using numerics::Stage;

namespace stage_detail {

constexpr std::string_view kNone = "none";
constexpr std::string_view kOnly = "only";
constexpr std::string_view kRaise = "raise";

std::vector<std::string_view> stage_names() {
  std::vector<std::string_view> names;
  for (Stage s : numerics::kAllStages) names.emplace_back(numerics::stage_name(s));
  return names;
}

// A stage the raise moves: narrower than fp32 (fp64 stays, fp32 has nowhere to go).
bool raisable(Format f) {
  return f != kRaiseFormat && format_fits(f, kRaiseFormat);
}

// Built by append: GCC 12 reports a false -Wrestrict for "\"" + std::string(...) chains.
std::string quoted(std::string_view text) {
  std::string out(1, '"');
  out.append(text).push_back('"');
  return out;
}

std::string format_text(Format f) {
  return numerics::format_name(f);
}

}  // namespace stage_detail

std::string StageSpec::stages_text() const {
  std::string text;
  for (Stage s : stages) {
    if (!text.empty()) text += '+';
    text += numerics::stage_name(s);
  }
  return text;
}

std::string StageSpec::text() const {
  switch (mode) {
    case StageMode::none:
      return std::string(stage_detail::kNone);
    case StageMode::only:
      return std::string(stage_detail::kOnly) + ":" + stages_text();
    case StageMode::raise:
      return std::string(stage_detail::kRaise) + ":" + stages_text();
  }
  return "?";
}

bool StageSpec::contains(Stage s) const {
  return std::find(stages.begin(), stages.end(), s) != stages.end();
}

bool parse_stage_spec(std::string_view text, StageSpec& out, std::string& error) {
  using namespace stage_detail;
  const char* forms =
      "\"none\", \"only:STAGE[+STAGE...]\" (those stages as the policy has them, the rest fp64) "
      "or \"raise:STAGE[+STAGE...]\" (those stages raised to fp32)";
  if (text == kNone) {
    out = StageSpec{};
    return true;
  }
  const std::size_t colon = text.find(':');
  const std::string_view mode = text.substr(0, colon);
  StageSpec spec;
  if (colon != std::string_view::npos && mode == kOnly) {
    spec.mode = StageMode::only;
  } else if (colon != std::string_view::npos && mode == kRaise) {
    spec.mode = StageMode::raise;
  } else {
    const std::string_view modes[] = {kNone, kOnly, kRaise};
    error = quoted(text);
    error.append(": expected ").append(forms);
    if (colon != std::string_view::npos) error += config::did_you_mean(mode, modes);
    return false;
  }
  const std::vector<std::string_view> names = stage_names();
  std::string_view rest = text.substr(colon + 1);
  std::vector<bool> seen(numerics::kAllStages.size(), false);
  while (true) {
    const std::size_t plus = rest.find('+');
    const std::string_view name = rest.substr(0, plus);
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      error = quoted(text);
      if (name.empty()) {
        error += ": an empty stage name";
      } else {
        error.append(": unknown stage ").append(quoted(name));
        error += config::did_you_mean(name, names);
      }
      error.append("; stages: ").append(config::join_names(names));
      return false;
    }
    const auto index = static_cast<std::size_t>(it - names.begin());
    if (seen[index]) {
      error = quoted(text);
      error.append(": stage ").append(quoted(name)).append(" named twice");
      return false;
    }
    seen[index] = true;
    if (plus == std::string_view::npos) break;
    rest = rest.substr(plus + 1);
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) spec.stages.push_back(numerics::kAllStages[i]);
  out = std::move(spec);
  return true;
}

PrecisionPolicy apply_stage_spec(const PrecisionPolicy& policy, const StageSpec& spec) {
  PrecisionPolicy out = policy;
  for (Stage s : numerics::kAllStages) {
    // The inputs stay as the policy rounds them: the golden runs on the same rounded inputs,
    // so they add no deviation of their own, and every row then measures the same data.
    if (spec.mode == StageMode::only && !spec.contains(s) && s != Stage::input)
      out.at(s) = Format::fp64;
    if (spec.mode == StageMode::raise && spec.contains(s) && stage_detail::raisable(policy[s]))
      out.at(s) = kRaiseFormat;
  }
  return out;
}

bool format_fits(Format a, Format b) {
  const numerics::FormatTraits ta = numerics::traits(a), tb = numerics::traits(b);
  return ta.fraction_bits <= tb.fraction_bits && ta.max_finite <= tb.max_finite &&
         ta.min_subnormal() >= tb.min_subnormal() && (!ta.has_inf || tb.has_inf);
}

std::optional<Feeder> stage_feeder(attention::Algorithm algorithm, const PrecisionPolicy& policy,
                                   Stage stage) {
  using attention::Algorithm;
  if (attention::is_fp8_algorithm(algorithm)) return std::nullopt;
  switch (stage) {
    case Stage::score:
      // S is the QK^T dot product (times the scale) as score_accum computes and stores it:
      // rows/baseline.hpp scale_score, flash1.hpp and flash2.hpp before round_all(score).
      return Feeder{Stage::score_accum, policy.score_accum};
    case Stage::output:
      // O is what out_accum's last operation left: the P V matmul (baseline), the division by
      // l (flash1's update_o, flash2's tensor form) or the multiply by 1/l (flash2).
      return Feeder{Stage::out_accum, policy.out_accum};
    case Stage::prob:
      // The baseline's P is e / l held in the softmax's compute format (one framework op); the
      // flash algorithms' p is an exp stored in the stats format. PyTorch's CPU kernel form
      // picks its exp by P's format (rows/flash2.hpp, fast_exp): there P's format matters
      // beyond its rounding.
      if (algorithm == Algorithm::baseline)
        return Feeder{Stage::stats, policy.compute(Stage::stats)};
      if (algorithm == Algorithm::flash2 && policy.softmax == numerics::SoftmaxForm::torch_cpu_avx2)
        return std::nullopt;
      return Feeder{Stage::stats, policy.stats};
    default:
      return std::nullopt;
  }
}

std::string stage_no_effect(attention::Algorithm algorithm, const PrecisionPolicy& policy,
                            const StageSpec& spec) {
  using stage_detail::format_text;
  if (spec.mode == StageMode::none || spec.stages.empty()) return "";
  std::string reason;
  const auto add = [&reason](const std::string& clause) {
    reason += (reason.empty() ? "" : "; ") + clause;
  };
  if (spec.mode == StageMode::only) {
    for (Stage s : spec.stages) {
      if (policy[s] != Format::fp64) return "";
      add(std::string(numerics::stage_name(s)) + " is fp64 under this policy");
    }
    return reason;
  }
  for (Stage s : spec.stages) {
    const std::string name = numerics::stage_name(s);
    if (!stage_detail::raisable(policy[s])) {
      add(name + " is " + format_text(policy[s]) + " already");
      continue;
    }
    const std::optional<Feeder> feeder = stage_feeder(algorithm, policy, s);
    if (!feeder || spec.contains(feeder->stage) || !format_fits(feeder->format, policy[s]))
      return "";
    add(name + " rounds only values of " + numerics::stage_name(feeder->stage) + ", which are " +
        format_text(feeder->format) + " already");
  }
  return reason;
}

std::vector<Stage> coupled_raise(attention::Algorithm algorithm, const PrecisionPolicy& policy,
                                 Stage stage) {
  StageSpec spec{StageMode::raise, {stage}};
  // Each step adds the feeder that made the group a no-op; a feeder chain ends within the seven
  // stages, and a group that still has no effect with its feeders is given up on (just {stage}).
  for (std::size_t step = 0; step < numerics::kAllStages.size(); ++step) {
    if (stage_no_effect(algorithm, policy, spec).empty()) return spec.stages;
    bool grew = false;
    for (Stage s : std::vector<Stage>(spec.stages)) {
      const std::optional<Feeder> feeder = stage_feeder(algorithm, policy, s);
      if (feeder && !spec.contains(feeder->stage) &&
          stage_detail::raisable(policy[feeder->stage])) {
        spec.stages.push_back(feeder->stage);
        grew = true;
      }
    }
    if (!grew) break;
    std::sort(spec.stages.begin(), spec.stages.end());
  }
  return stage_no_effect(algorithm, policy, spec).empty() ? spec.stages : std::vector<Stage>{stage};
}

}  // namespace attndev::experiment
