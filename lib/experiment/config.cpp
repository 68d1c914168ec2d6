#include "experiment/config.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "config/keys.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "experiment/inputs.hpp"
#include "experiment/stable_hash.hpp"
#include "io/json_depth.hpp"

namespace attndev::experiment {

using nlohmann::json;

const char* backend_name(Backend b) {
  return b == Backend::cpu ? "cpu" : "cuda";
}

namespace {

// Sizes beyond these are typos (an extra zero), not experiments: the baseline materializes
// N_q x N_kv scores per head, and the emulator runs on a CPU.
constexpr long long kMaxExtent = 1 << 20;
constexpr long long kMaxBatchHeads = 1 << 16;
constexpr std::size_t kMaxTrials = 1 << 20;

constexpr std::string_view kTopKeys[] = {"name",     "description", "axes",
                                         "zip",      "constraints", "trials",
                                         "variants", "metrics",     "reference"};
constexpr std::string_view kVariantKeys[] = {"name",    "algorithm", "policy",
                                             "backend", "baseline",  "ratio_to"};
constexpr std::string_view kTrialKeys[] = {"count", "seed", "seeds"};
constexpr std::string_view kConstraintKeys[] = {"require", "reason"};
constexpr std::string_view kBackendNames[] = {"cpu", "cuda"};
constexpr std::string_view kScalePlacements[] = {"scores", "query"};
// Axes a constraint may compare: the integer ones.
constexpr std::string_view kNumericAxes[] = {"batch",    "heads",   "seq_len", "seq_len_kv",
                                             "head_dim", "block_r", "block_c"};

using config::check_keys;
using config::did_you_mean;
using config::join_names;
using config::parse_policy;
using config::policy_label;
using config::type_name;

std::string at(std::string_view prefix, std::size_t i) {
  return config::index_path(prefix, i);
}

const json& require_type(const json& v, std::string_view path, bool ok, std::string_view wanted) {
  if (!ok)
    throw ConfigError(std::string(path),
                      "expected " + std::string(wanted) + ", got " + type_name(v));
  return v;
}

long long positive_int(const json& v, const std::string& path, long long max) {
  if (!v.is_number_integer())
    throw ConfigError(path, "expected a positive integer, got " + type_name(v) + " " + v.dump());
  const long long x =
      v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)
          ? max + 1
          : v.get<long long>();
  if (x < 1) throw ConfigError(path, "must be >= 1, got " + std::to_string(x));
  if (x > max) throw ConfigError(path, "must be <= " + std::to_string(max) + ", got " + v.dump());
  return x;
}

json canonical_axis_value(std::string_view axis, const json& v, const std::string& path) {
  if (axis == "causal") {
    require_type(v, path, v.is_boolean(), "true or false");
    return v;
  }
  if (axis == "distribution") {
    require_type(v, path, v.is_string(), "a distribution string such as \"normal(0,1)\"");
    Distribution d;
    std::string error;
    if (!parse_distribution(v.get<std::string>(), d, error)) throw ConfigError(path, error);
    return d.describe();
  }
  if (axis == "scale_placement") {
    require_type(v, path, v.is_string(), "\"scores\" or \"query\"");
    const std::string s = v.get<std::string>();
    if (std::find(std::begin(kScalePlacements), std::end(kScalePlacements), s) ==
        std::end(kScalePlacements))
      throw ConfigError(path, "unknown scale placement \"" + s + "\"" +
                                  did_you_mean(s, kScalePlacements) + "; valid: scores, query");
    return s;
  }
  if (axis == "seq_len_kv" && v.is_string()) {
    if (v.get<std::string>() != "seq_len")
      throw ConfigError(
          path, "expected a positive integer or \"seq_len\" (same as seq_len), got " + v.dump());
    return v;
  }
  const long long max = (axis == "batch" || axis == "heads") ? kMaxBatchHeads : kMaxExtent;
  return positive_int(v, path, max);
}

json default_axis_value(std::string_view axis) {
  if (axis == "batch" || axis == "heads") return 1;
  if (axis == "head_dim" || axis == "block_r" || axis == "block_c") return 64;
  if (axis == "seq_len_kv") return "seq_len";
  if (axis == "distribution") return "normal(0,1)";
  if (axis == "causal") return false;
  if (axis == "scale_placement") return "scores";
  return nullptr;  // seq_len: required
}

// nlohmann reports a byte offset; people read lines and columns.
std::string position_text(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

void apply_overrides(json& root, std::span<const std::string> overrides,
                     std::set<std::string>& overridden) {
  for (const std::string& text : overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("-a " + text,
                        "expected AXIS=VALUE, e.g. -a seq_len=[512,1024] or -a block_c=64");
    const std::string key = text.substr(0, eq);
    const std::string value_text = text.substr(eq + 1);
    if (std::find(std::begin(kAxisNames), std::end(kAxisNames), key) == std::end(kAxisNames))
      throw ConfigError("-a " + key, "unknown axis \"" + key + "\"" +
                                         did_you_mean(key, kAxisNames) +
                                         "; axes: " + join_names(kAxisNames));
    if (value_text.empty())
      throw ConfigError("-a " + key,
                        "empty value; give a value or a list, e.g. -a " + key + "=[1,2]");
    if (const auto deep = io::json_depth_error(value_text))
      throw ConfigError("-a " + key, "value " + *deep);
    json value = json::parse(value_text, nullptr, /*allow_exceptions=*/false);
    // Unquoted words (distribution=normal(0,1), scale_placement=query) are strings.
    if (value.is_discarded()) value = value_text;
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
  check_keys(axes, "axes", kAxisNames);
  std::vector<AxisValues> out;
  for (std::string_view name : kAxisNames) {
    AxisValues a;
    a.name = std::string(name);
    const std::string key(name);
    a.path = overridden.count(key) ? "-a " + key : "axes." + key;
    if (!axes.contains(key)) {
      json d = default_axis_value(name);
      if (d.is_null())
        throw ConfigError(a.path,
                          "missing; this axis has no default (e.g. \"" + key + "\": [512, 1024])");
      a.values.push_back(std::move(d));
    } else {
      const json& v = axes[key];
      if (v.is_array()) {
        if (v.empty()) throw ConfigError(a.path, "empty list; an axis needs at least one value");
        for (std::size_t i = 0; i < v.size(); ++i)
          a.values.push_back(canonical_axis_value(name, v[i], at(a.path, i)));
      } else {
        a.values.push_back(canonical_axis_value(name, v, a.path));
      }
      // Canonical values are equal exactly when their texts are; a hash set keeps this linear
      // (an axis may hold up to 2^20 values).
      std::unordered_map<std::string, std::size_t> first_at;
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        const auto [it, inserted] = first_at.emplace(a.values[i].dump(), i);
        if (!inserted)
          throw ConfigError(at(a.path, i), "duplicate value " + a.values[i].dump() + " (also at [" +
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

bool parse_operand(const std::string& token, std::string& axis, long long& literal) {
  if (std::find(std::begin(kNumericAxes), std::end(kNumericAxes), token) !=
      std::end(kNumericAxes)) {
    axis = token;
    return true;
  }
  if (token.empty() || token.size() > 12) return false;
  for (char c : token)
    if (c < '0' || c > '9') return false;
  axis.clear();
  literal = std::stoll(token);
  return true;
}

bool compare(long long a, CompareOp op, long long b) {
  switch (op) {
    case CompareOp::lt:
      return a < b;
    case CompareOp::le:
      return a <= b;
    case CompareOp::gt:
      return a > b;
    case CompareOp::ge:
      return a >= b;
    case CompareOp::eq:
      return a == b;
    case CompareOp::ne:
      return a != b;
  }
  return false;
}

Constraint parse_constraint_text(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string lhs, op, rhs, extra;
  in >> lhs >> op >> rhs;
  const std::string form =
      "expected \"AXIS OP AXIS-or-INTEGER\" with spaces, e.g. \"block_r <= seq_len\"";
  if (lhs.empty() || op.empty() || rhs.empty() || (in >> extra))
    throw ConfigError(path, form + ", got \"" + text + "\"");
  Constraint c;
  c.text = text;
  static const std::map<std::string, CompareOp> kOps = {
      {"<", CompareOp::lt},  {"<=", CompareOp::le}, {">", CompareOp::gt},
      {">=", CompareOp::ge}, {"==", CompareOp::eq}, {"!=", CompareOp::ne}};
  auto it = kOps.find(op);
  if (it == kOps.end())
    throw ConfigError(path, "unknown operator \"" + op + "\"; valid: < <= > >= == !=");
  c.op = it->second;
  for (auto [token, axis, literal] :
       {std::tie(lhs, c.lhs, c.lhs_literal), std::tie(rhs, c.rhs, c.rhs_literal)}) {
    if (!parse_operand(token, axis, literal))
      throw ConfigError(path, "\"" + token + "\" is neither an integer axis" +
                                  did_you_mean(token, kNumericAxes) +
                                  " nor a non-negative integer; axes: " + join_names(kNumericAxes));
  }
  if (c.lhs.empty() && c.rhs.empty() && !compare(c.lhs_literal, c.op, c.rhs_literal))
    throw ConfigError(path, "\"" + text + "\" is always false: it would skip every point");
  c.reason = "violates " + text;
  return c;
}

std::vector<Constraint> parse_constraints(const json& root) {
  std::vector<Constraint> out;
  if (!root.contains("constraints")) return out;
  const json& list = root["constraints"];
  require_type(list, "constraints", list.is_array(), "a list of constraints");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = at("constraints", i);
    const json& c = list[i];
    if (c.is_string()) {
      out.push_back(parse_constraint_text(c.get<std::string>(), path));
      continue;
    }
    require_type(c, path, c.is_object(),
                 "a string like \"block_r <= seq_len\" or {\"require\": ..., \"reason\": ...}");
    check_keys(c, path, kConstraintKeys);
    if (!c.contains("require")) throw ConfigError(path + ".require", "missing");
    require_type(c["require"], path + ".require", c["require"].is_string(), "a string");
    Constraint parsed = parse_constraint_text(c["require"].get<std::string>(), path + ".require");
    if (c.contains("reason")) {
      require_type(c["reason"], path + ".reason", c["reason"].is_string(), "a string");
      parsed.reason = c["reason"].get<std::string>();
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

std::uint64_t seed_value(const json& v, const std::string& path) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<long long>() < 0))
    throw ConfigError(path, "expected a non-negative integer seed, got " + v.dump());
  return v.get<std::uint64_t>();
}

std::vector<std::uint64_t> parse_trials(const json& root) {
  if (!root.contains("trials")) return {0};
  const json& t = root["trials"];
  std::vector<std::uint64_t> seeds;
  if (t.is_number_integer()) {
    const auto n = static_cast<std::size_t>(positive_int(t, "trials", kMaxTrials));
    for (std::size_t i = 0; i < n; ++i) seeds.push_back(i);
    return seeds;
  }
  require_type(t, "trials", t.is_object(),
               "a count (3), {\"count\": 3, \"seed\": 100} or {\"seeds\": [1, 7]}");
  check_keys(t, "trials", kTrialKeys);
  if (t.contains("seeds")) {
    if (t.contains("count") || t.contains("seed"))
      throw ConfigError("trials", "give either \"seeds\" or \"count\" (+ \"seed\"), not both");
    const json& list = t["seeds"];
    require_type(list, "trials.seeds", list.is_array(), "a list of seeds");
    if (list.empty()) throw ConfigError("trials.seeds", "empty list; give at least one seed");
    std::unordered_set<std::uint64_t> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::uint64_t s = seed_value(list[i], at("trials.seeds", i));
      if (!seen.insert(s).second)
        throw ConfigError(at("trials.seeds", i), "duplicate seed " + std::to_string(s));
      seeds.push_back(s);
    }
    return seeds;
  }
  if (!t.contains("count")) throw ConfigError("trials.count", "missing (or give \"seeds\")");
  const auto n = static_cast<std::size_t>(positive_int(t["count"], "trials.count", kMaxTrials));
  const std::uint64_t first = t.contains("seed") ? seed_value(t["seed"], "trials.seed") : 0;
  for (std::size_t i = 0; i < n; ++i) seeds.push_back(first + i);
  return seeds;
}

std::vector<Variant> parse_variants(const json& root) {
  if (!root.contains("variants"))
    throw ConfigError("variants",
                      "missing; list what to run, e.g. [{\"algorithm\": \"flash2\", "
                      "\"policy\": \"kernel-bf16\"}]");
  const json& list = root["variants"];
  require_type(list, "variants", list.is_array(), "a list of variants");
  if (list.empty())
    throw ConfigError("variants", "empty list; a config needs at least one variant");
  std::vector<std::string_view> algorithm_names;
  for (attention::Algorithm a : attention::kEveryAlgorithm)
    algorithm_names.push_back(attention::algorithm_name(a));

  std::vector<Variant> out;
  int baseline_index = -1;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = at("variants", i);
    const json& v = list[i];
    require_type(v, path, v.is_object(), "an object {\"algorithm\": ..., \"policy\": ...}");
    check_keys(v, path, kVariantKeys);
    Variant variant;
    if (!v.contains("algorithm"))
      throw ConfigError(path + ".algorithm", "missing; one of " + join_names(algorithm_names));
    require_type(v["algorithm"], path + ".algorithm", v["algorithm"].is_string(), "a string");
    const std::string alg = v["algorithm"].get<std::string>();
    if (!attention::parse_algorithm(alg, variant.algorithm))
      throw ConfigError(path + ".algorithm", "unknown algorithm \"" + alg + "\"" +
                                                 did_you_mean(alg, algorithm_names) +
                                                 "; valid: " + join_names(algorithm_names));
    if (!v.contains("policy"))
      throw ConfigError(path + ".policy",
                        "missing; a preset name such as \"kernel-bf16\" or an object");
    std::string error;
    if (!parse_policy(v["policy"], variant.policy, error))
      throw ConfigError(path + ".policy", error);
    variant.policy_label = policy_label(variant.policy);
    if (v.contains("backend")) {
      require_type(v["backend"], path + ".backend", v["backend"].is_string(),
                   "\"cpu\" or \"cuda\"");
      const std::string b = v["backend"].get<std::string>();
      if (b == "cpu") {
        variant.backend = Backend::cpu;
      } else if (b == "cuda") {
        variant.backend = Backend::cuda;
      } else {
        throw ConfigError(path + ".backend", "unknown backend \"" + b + "\"" +
                                                 did_you_mean(b, kBackendNames) +
                                                 "; valid: cpu, cuda");
      }
    }
    if (v.contains("baseline")) {
      require_type(v["baseline"], path + ".baseline", v["baseline"].is_boolean(), "true or false");
      variant.baseline = v["baseline"].get<bool>();
      if (variant.baseline) {
        if (baseline_index >= 0)
          throw ConfigError(
              path + ".baseline",
              "variants[" + std::to_string(baseline_index) +
                  "] is already the baseline; mark one variant \"baseline\": true and "
                  "point others at theirs with \"ratio_to\"");
        baseline_index = static_cast<int>(i);
      }
    }
    if (v.contains("ratio_to")) {
      require_type(v["ratio_to"], path + ".ratio_to", v["ratio_to"].is_string(), "a variant name");
      variant.ratio_to = v["ratio_to"].get<std::string>();
    }
    if (v.contains("name")) {
      require_type(v["name"], path + ".name", v["name"].is_string(), "a string");
      variant.name = v["name"].get<std::string>();
      if (variant.name.empty()) throw ConfigError(path + ".name", "empty name");
    } else {
      variant.name =
          alg + "-" + variant.policy_label + (variant.backend == Backend::cuda ? "-cuda" : "");
    }
    for (std::size_t j = 0; j < out.size(); ++j)
      if (out[j].name == variant.name)
        throw ConfigError(path + ".name", "duplicate variant name \"" + variant.name +
                                              "\" (also variants[" + std::to_string(j) +
                                              "]); give each variant a distinct \"name\"");
    out.push_back(std::move(variant));
  }
  std::vector<std::string_view> names;
  for (const Variant& v : out) names.push_back(v.name);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::string& target = out[i].ratio_to;
    if (target.empty()) continue;
    const std::string path = at("variants", i) + ".ratio_to";
    if (target == out[i].name)
      throw ConfigError(path, "a variant cannot be its own ratio reference");
    if (std::find(names.begin(), names.end(), target) == names.end())
      throw ConfigError(path, "no variant named \"" + target + "\"" + did_you_mean(target, names) +
                                  "; variants: " + join_names(names));
  }
  return out;
}

std::vector<std::string> parse_metrics(const json& root) {
  if (!root.contains("metrics")) return {"max_abs", "rmse", "ratio_max_abs"};
  const json& list = root["metrics"];
  require_type(list, "metrics", list.is_array(), "a list of metric names");
  if (list.empty())
    throw ConfigError("metrics", "empty list; omit the key for the default metrics");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = at("metrics", i);
    require_type(list[i], path, list[i].is_string(), "a metric name");
    const std::string m = list[i].get<std::string>();
    if (std::find(std::begin(kSelectableMetrics), std::end(kSelectableMetrics), m) ==
        std::end(kSelectableMetrics))
      throw ConfigError(path, "unknown metric \"" + m + "\"" + did_you_mean(m, kSelectableMetrics) +
                                  "; valid: " + join_names(kSelectableMetrics));
    if (std::find(out.begin(), out.end(), m) != out.end())
      throw ConfigError(path, "duplicate metric \"" + m + "\"");
    out.push_back(m);
  }
  return out;
}

}  // namespace

const AxisValues& Config::axis(std::string_view name) const {
  for (const AxisValues& a : axes)
    if (a.name == name) return a;
  throw std::logic_error("no axis " + std::string(name));
}

int Config::ratio_reference(std::size_t v) const {
  const std::string& target = variants[v].ratio_to;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (!target.empty() ? variants[i].name == target : variants[i].baseline)
      return static_cast<int>(i);
  }
  return -1;
}

Config parse_config(std::string_view text, std::span<const std::string> overrides) {
  if (const auto deep = io::json_depth_error(text)) throw ConfigError("", "the JSON is " + *deep);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..."
    const auto colon = what.find(": ");
    throw ConfigError("", "invalid JSON at " + position_text(text, e.byte ? e.byte - 1 : 0) + ": " +
                              (colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::exception& e) {
    // Not a syntax error but still unreadable, e.g. a number beyond double range (1e99999).
    std::string what = e.what();
    const auto bracket = what.find("] ");
    throw ConfigError(
        "", "invalid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  if (!root.is_object())
    throw ConfigError("", "a config is a JSON object {...}, got " + type_name(root));
  check_keys(root, "", kTopKeys);

  std::set<std::string> overridden;
  apply_overrides(root, overrides, overridden);

  Config c;
  if (!root.contains("name"))
    throw ConfigError("name", "missing; name the experiment (used for the output folder)");
  require_type(root["name"], "name", root["name"].is_string(), "a string");
  c.name = root["name"].get<std::string>();
  if (c.name.empty() ||
      c.name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos ||
      c.name[0] == '.')
    throw ConfigError("name",
                      "\"" + c.name +
                          "\" must be non-empty and use only letters, digits, '.', '_', '-' "
                          "(it names the default output folder results/<name>)");
  if (root.contains("description")) {
    require_type(root["description"], "description", root["description"].is_string(), "a string");
    c.description = root["description"].get<std::string>();
  }
  if (root.contains("reference")) {
    const json& r = root["reference"];
    if (!r.is_string() || r.get<std::string>() != "golden")
      throw ConfigError("reference",
                        "only \"golden\" (baseline attention in fp64 on the same rounded "
                        "inputs) is supported, got " +
                            r.dump());
  }
  c.axes = parse_axes(root, overridden);
  c.zip = parse_zip(root, c.axes);
  c.constraints = parse_constraints(root);
  c.seeds = parse_trials(root);
  c.variants = parse_variants(root);
  c.metrics = parse_metrics(root);
  c.effective = root;
  c.hash = stable_hash_hex(root.dump());
  return c;
}

Config load_config_file(const std::string& path, std::span<const std::string> overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot read the config file (does it exist?)");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse_config(text.str(), overrides);
  } catch (const ConfigError& e) {
    throw ConfigError(path + (e.path().empty() ? "" : ": " + e.path()), e.message());
  }
}

}  // namespace attndev::experiment
