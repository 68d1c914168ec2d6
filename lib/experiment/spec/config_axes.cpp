// Parsing `axes`, `-a` overrides and `zip` groups of an experiment config (config_parse.hpp).
#include "experiment/spec/config_parse.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "config/keys.hpp"
#include "config/suggest.hpp"
#include "experiment/spec/config_parse.hpp"
#include "experiment/spec/inputs.hpp"
#include "io/json_strict.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

namespace config_parse {

using config::check_keys;
using config::did_you_mean;
using config::join_names;
using config::type_name;
using nlohmann::json;

namespace {

constexpr std::string_view kScalePlacements[] = {"scores", "query"};

}  // namespace

// Every key `axes` and `-a` accept: the point axes, then the variant axes.
std::span<const std::string_view> every_axis_name() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all(std::begin(kAxisNames), std::end(kAxisNames));
    all.insert(all.end(), std::begin(kVariantAxisNames), std::end(kVariantAxisNames));
    return all;
  }();
  return names;
}

bool is_variant_axis(std::string_view name) {
  return std::find(std::begin(kVariantAxisNames), std::end(kVariantAxisNames), name) !=
         std::end(kVariantAxisNames);
}

namespace {

AxisValue parse_axis_value(std::string_view axis, const json& v, const std::string& path) {
  if (axis == "causal") {
    require_type(v, path, v.is_boolean(), "true or false");
    return v.get<bool>();
  }
  if (axis == "inputs") {
    require_type(v, path, v.is_string() && !v.get<std::string>().empty(),
                 "the path of a .safetensors file or a folder of q.npy, k.npy, v.npy");
    return InputsFile{v.get<std::string>()};
  }
  if (axis == "distribution") {
    require_type(v, path, v.is_string(), "a distribution string such as \"normal(0,1)\"");
    Distribution d;
    std::string error;
    if (!parse_distribution(v.get<std::string>(), d, error)) throw ConfigError(path, error);
    return d;
  }
  if (axis == "scale_placement") {
    require_type(v, path, v.is_string(), "\"scores\" or \"query\"");
    const std::string s = v.get<std::string>();
    if (s == "scores") return attention::ScalePlacement::scores;
    if (s == "query") return attention::ScalePlacement::query;
    throw ConfigError(path, "unknown scale placement \"" + s + "\"" +
                                did_you_mean(s, kScalePlacements) + "; valid: scores, query");
  }
  if (axis == "seq_len_kv" && v.is_string()) {
    if (v.get<std::string>() != "seq_len")
      throw ConfigError(
          path, "expected a positive integer or \"seq_len\" (same as seq_len), got " + v.dump());
    return SameAsSeqLen{};
  }
  const long long max = (axis == "batch" || axis == "heads") ? kMaxBatchHeads : kMaxExtent;
  return positive_int(v, path, max);
}

// The value an axis takes when the config does not name it; nullopt for seq_len (required unless
// the inputs come from files).
std::optional<AxisValue> default_axis_value(std::string_view axis) {
  if (axis == "inputs") return InputsFile{};
  if (axis == "batch" || axis == "heads") return 1LL;
  if (axis == "head_dim" || axis == "block_r" || axis == "block_c") return 64LL;
  if (axis == "seq_len_kv") return SameAsSeqLen{};
  if (axis == "distribution") return Distribution{};
  if (axis == "causal") return false;
  if (axis == "scale_placement") return attention::ScalePlacement::scores;
  return std::nullopt;
}

}  // namespace

void apply_overrides(json& root, std::span<const std::string> overrides,
                     std::set<std::string>& overridden) {
  for (const std::string& text : overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("-a " + text,
                        "expected AXIS=VALUE, e.g. -a seq_len=[512,1024] or -a block_c=64");
    const std::string key = text.substr(0, eq);
    const std::string value_text = text.substr(eq + 1);
    const auto names = every_axis_name();
    if (std::find(names.begin(), names.end(), key) == names.end())
      throw ConfigError("-a " + key, "unknown axis \"" + key + "\"" + did_you_mean(key, names) +
                                         "; axes: " + join_names(names));
    if (value_text.empty())
      throw ConfigError("-a " + key,
                        "empty value; give a value or a list, e.g. -a " + key + "=[1,2]");
    if (const auto deep = io::json_text_error(value_text))
      throw ConfigError("-a " + key, "value " + *deep);
    json value = json::parse(value_text, nullptr, /*allow_exceptions=*/false);
    // Unquoted words (distribution=normal(0,1), scale_placement=query) are strings. JSON text
    // is UTF-8 (the parser checks it); a bare word from the command line is not checked by
    // anyone, and a JSON string holding invalid UTF-8 throws when any message prints it.
    if (value.is_discarded()) {
      value = value_text;
      try {
        (void)value.dump();
      } catch (const json::type_error&) {
        throw ConfigError("-a " + key, "value is not valid UTF-8 text");
      }
    }
    if (!root.contains("axes") || !root["axes"].is_object()) root["axes"] = json::object();
    root["axes"][key] = value;
    overridden.insert(key);
  }
}

std::vector<AxisValues> parse_axes(const json& root, const std::set<std::string>& overridden) {
  if (!root.contains("axes"))
    throw ConfigError("axes", "missing; a config needs at least \"axes\": {\"seq_len\": [...]}");
  const json& axes = root["axes"];
  require_type(axes, "axes", axes.is_object(), "an object of axis -> list of values");
  check_keys(axes, "axes", every_axis_name());
  const bool from_files = axes.contains("inputs");
  std::vector<AxisValues> out;
  for (std::string_view name : kAxisNames) {
    AxisValues a;
    a.name = std::string(name);
    const std::string key(name);
    a.path = overridden.count(key) ? "-a " + key : "axes." + key;
    const bool file_shape = std::find(std::begin(kFileShapeAxes), std::end(kFileShapeAxes), name) !=
                            std::end(kFileShapeAxes);
    if (from_files && file_shape && axes.contains(key))
      throw ConfigError(a.path, "comes from the inputs file(s) of axes.inputs; remove \"" + key +
                                    "\" (or remove \"inputs\" to draw inputs from a distribution)");
    if (!axes.contains(key)) {
      std::optional<AxisValue> d = default_axis_value(name);
      // With inputs from files seq_len is the file's: a placeholder until the plan reads it.
      if (!d && from_files) d = 0LL;
      if (!d)
        throw ConfigError(a.path,
                          "missing; this axis has no default (e.g. \"" + key + "\": [512, 1024])");
      a.values.push_back(std::move(*d));
    } else {
      const json& v = axes[key];
      if (v.is_array()) {
        if (v.empty()) throw ConfigError(a.path, "empty list; an axis needs at least one value");
        for (std::size_t i = 0; i < v.size(); ++i)
          a.values.push_back(parse_axis_value(name, v[i], at(a.path, i)));
      } else {
        a.values.push_back(parse_axis_value(name, v, a.path));
      }
      // Values are equal exactly when their canonical texts are; a hash set keeps this linear
      // (an axis may hold up to 2^20 values).
      std::unordered_map<std::string, std::size_t> first_at;
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        const std::string text = axis_value_json(a.values[i]).dump();
        const auto [it, inserted] = first_at.emplace(text, i);
        if (!inserted)
          throw ConfigError(at(a.path, i), "duplicate value " + text + " (also at [" +
                                               std::to_string(it->second) +
                                               "]); it would run the same points twice");
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<std::vector<std::string>> parse_zip(const json& root,
                                                const std::vector<AxisValues>& axes) {
  std::vector<std::vector<std::string>> groups;
  if (!root.contains("zip")) return groups;
  const json& zip = root["zip"];
  require_type(zip, "zip", zip.is_array(),
               "a list of axis groups, e.g. [[\"seq_len\", \"block_c\"]]");
  std::map<std::string, std::string> seen;  // axis -> path of its group
  for (std::size_t g = 0; g < zip.size(); ++g) {
    const std::string gpath = at("zip", g);
    const json& group = zip[g];
    require_type(group, gpath, group.is_array(), "a list of axis names");
    if (group.size() < 2) throw ConfigError(gpath, "a zip group needs at least two axes");
    std::vector<std::string> names;
    std::size_t length = 0;
    std::string first;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const std::string path = at(gpath, i);
      require_type(group[i], path, group[i].is_string(), "an axis name");
      const std::string name = group[i].get<std::string>();
      auto it = std::find_if(axes.begin(), axes.end(),
                             [&](const AxisValues& a) { return a.name == name; });
      if (it == axes.end() && is_variant_axis(name))
        throw ConfigError(path, "\"" + name +
                                    "\" is an axis of the variants (each value makes a copy of the "
                                    "variants that name {" +
                                    name + "}), not of the points; it cannot be zipped");
      if (it == axes.end())
        throw ConfigError(path, "unknown axis \"" + name + "\"" + did_you_mean(name, kAxisNames));
      if (seen.count(name))
        throw ConfigError(path, "axis \"" + name + "\" is already zipped in " + seen[name] +
                                    "; an axis can move with only one group");
      seen[name] = gpath;
      if (i == 0) {
        length = it->values.size();
        first = name;
      } else if (it->values.size() != length) {
        throw ConfigError(path, "zipped axes must have the same number of values: " + first +
                                    " has " + std::to_string(length) + ", " + name + " has " +
                                    std::to_string(it->values.size()) + " (" + it->path + ")");
      }
      names.push_back(name);
    }
    groups.push_back(std::move(names));
  }
  return groups;
}

// The values of `axes.format` / `axes.policy`: format names (canonical spellings, which preset
// names are built from: "kernel-{format}") and preset names. A policy object cannot be spliced
// into a string; custom policies stay variants of their own.
VariantAxes parse_variant_axes(const json& root, const std::set<std::string>& overridden) {
  VariantAxes out;
  const json& axes = root["axes"];
  for (std::string_view name : kVariantAxisNames) {
    const std::string key(name);
    if (!axes.contains(key)) continue;
    const std::string path = overridden.count(key) ? "-a " + key : "axes." + key;
    const json list = axes[key].is_array() ? axes[key] : json::array({axes[key]});
    if (list.empty()) throw ConfigError(path, "empty list; an axis needs at least one value");
    std::vector<std::string> values;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string vpath = axes[key].is_array() ? at(path, i) : path;
      const bool is_format = name == "format";
      require_type(list[i], vpath, list[i].is_string() && !list[i].get<std::string>().empty(),
                   is_format ? "a format name such as \"bf16\""
                             : "a preset name such as \"kernel-bf16\" (`attndev list presets`)");
      const std::string value = list[i].get<std::string>();
      if (is_format) {
        std::vector<std::string_view> formats;
        for (numerics::Format f : numerics::kAllFormats)
          formats.push_back(numerics::format_name(f));
        if (std::find(formats.begin(), formats.end(), value) == formats.end())
          throw ConfigError(vpath, "unknown format \"" + value + "\"" +
                                       did_you_mean(value, formats) +
                                       "; valid: " + join_names(formats));
      }
      if (std::find(values.begin(), values.end(), value) != values.end())
        throw ConfigError(
            vpath, "duplicate value \"" + value + "\"; it would run the same variants twice");
      values.push_back(value);
    }
    out.emplace_back(key, std::move(values));
  }
  return out;
}

}  // namespace config_parse

}  // namespace attndev::experiment
