// The parts of parse_config (config.cpp) that other files of the config parser share: the
// JSON helpers and one parser per top-level key. Internal to lib/experiment/spec; every function
// throws ConfigError naming the JSON path of the offending value.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/spec/config.hpp"

namespace attndev::experiment::config_parse {

// Sizes beyond these are typos (an extra zero), not experiments: the baseline materializes
// N_q x N_kv scores per head, and the emulator runs on a CPU.
inline constexpr long long kMaxExtent = 1 << 20;
inline constexpr long long kMaxBatchHeads = 1 << 16;
inline constexpr std::size_t kMaxTrials = 1 << 20;

// "variants" + 2 -> "variants[2]".
std::string at(std::string_view prefix, std::size_t i);
// Throws "expected <wanted>, got <type>" at `path` unless `ok`.
const nlohmann::json& require_type(const nlohmann::json& v, std::string_view path, bool ok,
                                   std::string_view wanted);
long long positive_int(const nlohmann::json& v, const std::string& path, long long max);

// config_axes.cpp: every key `axes` and `-a` accept (the point axes, then the variant axes).
std::span<const std::string_view> every_axis_name();
bool is_variant_axis(std::string_view name);
// `-a AXIS=VALUE` written into root["axes"]; `overridden` receives the axes so set.
void apply_overrides(nlohmann::json& root, std::span<const std::string> overrides,
                     std::set<std::string>& overridden);
std::vector<AxisValues> parse_axes(const nlohmann::json& root,
                                   const std::set<std::string>& overridden);
std::vector<std::vector<std::string>> parse_zip(const nlohmann::json& root,
                                                const std::vector<AxisValues>& axes);
using VariantAxes = std::vector<std::pair<std::string, std::vector<std::string>>>;
VariantAxes parse_variant_axes(const nlohmann::json& root, const std::set<std::string>& overridden);

// constraints.cpp
std::vector<Constraint> parse_constraints(const nlohmann::json& root);

// variant_list.cpp: `variants`, expanded over the variant axes, cross-checked (names, ratio_to,
// reference).
std::vector<Variant> parse_variants(const nlohmann::json& root, const VariantAxes& variant_axes);

}  // namespace attndev::experiment::config_parse
