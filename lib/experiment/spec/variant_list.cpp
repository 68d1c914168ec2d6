// `variants`: the list expanded over the variant axes (`axes.format`, `axes.policy`: one copy of a
// variant per value it names), then checked across variants (names, baseline, ratio_to, reference).
#include "experiment/spec/config_parse.hpp"

#include <algorithm>
#include <set>

#include "config/keys.hpp"
#include "config/suggest.hpp"

namespace attndev::experiment {

namespace config_parse {

using config::check_keys;
using config::did_you_mean;
using config::join_names;
using config::type_name;
using nlohmann::json;

namespace {

// Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for "{" + std::string(...)
// (the prepend of operator+(const char*, string&&)) once it is inlined here.
std::string placeholder(std::string_view axis) {
  std::string text(1, '{');
  text.append(axis).push_back('}');
  return text;
}

// Whether any string of the variant names {axis}. The external command is left out: its
// {format} is the exchange format, filled in per call (and equal to the variant's `format`).
bool names_placeholder(const json& v, std::string_view axis, bool top = true) {
  if (v.is_string()) return v.get<std::string>().find(placeholder(axis)) != std::string::npos;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!(top && it.key() == "external") && names_placeholder(it.value(), axis, /*top=*/false))
        return true;
  }
  if (v.is_array()) {
    for (const json& item : v)
      if (names_placeholder(item, axis, /*top=*/false)) return true;
  }
  return false;
}

void substitute(json& v, std::string_view axis, const std::string& value, bool top = true) {
  if (v.is_string()) {
    std::string text = v.get<std::string>();
    const std::string ph = placeholder(axis);
    for (std::size_t pos = text.find(ph); pos != std::string::npos;
         pos = text.find(ph, pos + value.size()))
      text.replace(pos, ph.size(), value);
    v = text;
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!(top && it.key() == "external")) substitute(it.value(), axis, value, /*top=*/false);
  } else if (v.is_array()) {
    for (json& item : v) substitute(item, axis, value, /*top=*/false);
  }
}

struct VariantSource {
  json value;
  std::string path;  // variants[2], or variants[2][format=bf16] for a copy
};

// One copy of each variant per combination of the variant axes it names, in the order of the
// list, then of the axes' values ("baseline-bf16", "baseline-fp16", "flash2-bf16", ...).
std::vector<VariantSource> expand_variants(const json& list, const VariantAxes& axes) {
  std::vector<VariantSource> out;
  std::set<std::string> used_axes;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::vector<VariantSource> copies = {{list[i], at("variants", i)}};
    if (!list[i].is_object()) {
      out.push_back(std::move(copies.front()));
      continue;
    }
    for (std::string_view axis : kVariantAxisNames) {
      if (!names_placeholder(list[i], axis)) continue;
      const auto it =
          std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a.first == axis; });
      if (it == axes.end())
        throw ConfigError(
            at("variants", i),
            "names " + placeholder(axis) + ", but the config has no axis \"" + std::string(axis) +
                "\": add its values to axes, e.g. \"" + std::string(axis) + "\": " +
                (axis == "format" ? "[\"bf16\", \"fp16\"]" : "[\"kernel-bf16\", \"kernel-fp16\"]"));
      if (list[i].contains("name") && !names_placeholder(list[i]["name"], axis))
        throw ConfigError(config::join_path(at("variants", i), "name"),
                          "the name is the same for every value of axes." + std::string(axis) +
                              ": name the copies apart, e.g. \"" +
                              (list[i]["name"].is_string() ? list[i]["name"].get<std::string>()
                                                           : std::string("flash2")) +
                              "-" + placeholder(axis) + "\"");
      used_axes.insert(std::string(axis));
      std::vector<VariantSource> next;
      for (const VariantSource& c : copies) {
        for (const std::string& value : it->second) {
          VariantSource copy = c;
          substitute(copy.value, axis, value);
          copy.path.append("[").append(axis).append("=").append(value).append("]");
          next.push_back(std::move(copy));
        }
      }
      copies = std::move(next);
    }
    for (VariantSource& c : copies) out.push_back(std::move(c));
  }
  for (const auto& [axis, values] : axes)
    if (!used_axes.count(axis))
      throw ConfigError("axes." + axis, "no variant names " + placeholder(axis) +
                                            ", so this axis would change nothing: write it into "
                                            "a variant (e.g. \"policy\": \"kernel-" +
                                            placeholder(axis) + "\") or remove the axis");
  return out;
}

}  // namespace

std::vector<Variant> parse_variants(const json& root, const VariantAxes& variant_axes) {
  if (!root.contains("variants"))
    throw ConfigError("variants",
                      "missing; list what to run, e.g. [{\"algorithm\": \"flash2\", "
                      "\"policy\": \"kernel-bf16\"}]");
  const json& list = root["variants"];
  require_type(list, "variants", list.is_array(), "a list of variants");
  if (list.empty())
    throw ConfigError("variants", "empty list; a config needs at least one variant");

  const std::vector<VariantSource> sources = expand_variants(list, variant_axes);
  std::vector<Variant> out;
  int baseline_index = -1;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::string& path = sources[i].path;
    Variant variant = parse_variant(sources[i].value, path);
    if (variant.baseline) {
      if (baseline_index >= 0)
        throw ConfigError(path + ".baseline",
                          sources[static_cast<std::size_t>(baseline_index)].path +
                              " is already the baseline; mark one variant \"baseline\": true "
                              "and point others at theirs with \"ratio_to\" (with axes.format: "
                              "\"ratio_to\": \"baseline-{format}\")");
      baseline_index = static_cast<int>(i);
    }
    for (std::size_t j = 0; j < out.size(); ++j)
      if (out[j].name == variant.name)
        throw ConfigError(path + ".name", "duplicate variant name \"" + variant.name + "\" (also " +
                                              sources[j].path +
                                              "); give each variant a distinct \"name\"");
    out.push_back(std::move(variant));
  }
  std::vector<std::string_view> names;
  for (const Variant& v : out) names.push_back(v.name);
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (const auto& [key, target] :
         {std::pair<const char*, const std::string*>{"ratio_to", &out[i].ratio_to},
          {"reference", &out[i].reference}}) {
      if (target->empty() || *target == kGoldenReference) continue;
      const std::string path = sources[i].path + "." + key;
      if (*target == out[i].name)
        throw ConfigError(path,
                          std::string("a variant cannot be its own ") +
                              (std::string(key) == "ratio_to" ? "ratio reference" : "reference"));
      if (std::find(names.begin(), names.end(), *target) == names.end())
        throw ConfigError(path, "no variant named \"" + *target + "\"" +
                                    did_you_mean(*target, names) +
                                    "; variants: " + join_names(names));
    }
  }
  return out;
}

}  // namespace config_parse

}  // namespace attndev::experiment
