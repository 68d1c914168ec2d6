#include "experiment/spec/config.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <span>
#include <unordered_set>

#include "config/keys.hpp"
#include "config/names.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "experiment/spec/config_parse.hpp"
#include "experiment/spec/inputs.hpp"
#include "experiment/spec/stable_hash.hpp"
#include "io/json_strict.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

namespace config_parse {

using config::type_name;
using nlohmann::json;

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

}  // namespace config_parse

using config::check_keys;
using config::did_you_mean;
using config::join_names;
using config::type_name;
using nlohmann::json;
using namespace config_parse;

namespace {

constexpr std::string_view kTopKeys[] = {"name",        "description", "axes",     "zip",
                                         "constraints", "trials",      "variants", "metrics",
                                         "reference",   "dump",        "setup",    "backend"};
constexpr std::string_view kTrialKeys[] = {"count", "seed", "seeds"};
constexpr std::string_view kRunBackendNames[] = {"cpu", "cuda"};

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
  // Trial i uses seed first + i: past 2^64 - 1 it would wrap to 0, 1, ... silently, seeds that
  // another config's trials already use.
  if (n - 1 > std::numeric_limits<std::uint64_t>::max() - first)
    throw ConfigError(
        "trials.seed",
        "seed " + std::to_string(first) + " with count " + std::to_string(n) +
            " runs past 2^64 - 1 = " + std::to_string(std::numeric_limits<std::uint64_t>::max()) +
            "; use a seed of at most " +
            std::to_string(std::numeric_limits<std::uint64_t>::max() - (n - 1)) +
            " or list the seeds: {\"seeds\": [...]}");
  for (std::size_t i = 0; i < n; ++i) seeds.push_back(first + i);
  return seeds;
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

int Config::output_reference(std::size_t v) const {
  const std::string& target = variants[v].reference.empty() ? reference : variants[v].reference;
  if (target == kGoldenReference) return -1;
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (i != v && variants[i].name == target) return static_cast<int>(i);
  return -1;  // the config-wide reference is the variant itself: nothing to compare
}

std::string config_hash(const json& effective) {
  json hashed = effective;
  if (hashed.is_object())
    for (auto it = hashed.begin(); it != hashed.end();)
      // The run-level backend changes where the numbers are computed, not the numbers (the
      // device runs the emulator's own code: docs/cuda.md): a folder started on one resumes on
      // the other, and each row records where its parts ran.
      it = it.key() == "description" || it.key() == "metrics" || it.key() == "dump" ||
                   it.key() == "setup" || it.key() == "backend" || config::is_comment_key(it.key())
               ? hashed.erase(it)
               : std::next(it);
  return stable_hash_hex(hashed.dump());
}

std::string points_hash(const json& effective) {
  json points = effective;
  if (points.is_object()) {
    points.erase("variants");
    if (points.contains("axes") && points["axes"].is_object())
      for (std::string_view axis : kVariantAxisNames) points["axes"].erase(std::string(axis));
  }
  return config_hash(points);
}

namespace {

// The part of a variant that decides its numbers, as JSON (variant_keys says what is in it).
json variant_definition(const Variant& v) {
  json d = {{"algorithm", variant_algorithm_name(v)},
            {"policy", config::policy_stages_json(v.policy)},
            {"backend", backend_name(v.backend)}};
  if (v.block_r) d["block_r"] = *v.block_r;
  if (v.block_c) d["block_c"] = *v.block_c;
  if (v.external)
    d["external"] = {{"command", v.external->command},
                     {"worker", v.external->worker},
                     {"tiles", v.external->tile_dependent}};
  return d;
}

std::vector<std::string> make_variant_keys(const Config& c) {
  std::vector<std::string> keys(c.variants.size());
  std::vector<int> state(c.variants.size(), 0);  // 0 new, 1 in progress, 2 done
  // Depth first over ratio and output references (cycles are refused by the parser: a variant
  // is never its own reference, and references name other variants).
  const auto key_of = [&](auto&& self, std::size_t v) -> const std::string& {
    if (state[v] == 2) return keys[v];
    state[v] = 1;
    json d = variant_definition(c.variants[v]);
    for (const auto& [field, ref] : {std::pair{"ratio_key", c.ratio_reference(v)},
                                     std::pair{"ref_key", c.output_reference(v)}})
      if (ref >= 0 && static_cast<std::size_t>(ref) != v)
        d[field] = state[static_cast<std::size_t>(ref)] == 1
                       ? json(c.variants[static_cast<std::size_t>(ref)].name)
                       : json(self(self, static_cast<std::size_t>(ref)));
    keys[v] = stable_hash_hex(d.dump());
    state[v] = 2;
    return keys[v];
  };
  for (std::size_t v = 0; v < c.variants.size(); ++v) key_of(key_of, v);
  return keys;
}

}  // namespace

std::string legacy_config_hash(const json& effective) {
  return stable_hash_hex(effective.dump());
}

std::vector<std::string> config_warnings(const Config& config) {
  std::vector<std::string> out;
  for (std::size_t v = 0; v < config.variants.size(); ++v) {
    const int ref = config.ratio_reference(v);
    if (ref < 0 || static_cast<std::size_t>(ref) == v) continue;
    const Variant& x = config.variants[v];
    const Variant& r = config.variants[static_cast<std::size_t>(ref)];
    if (x.policy.input == r.policy.input) continue;
    // Each variant reads Q, K, V rounded to its own input format and is measured against the
    // golden of those inputs: a ratio across formats mixes the input rounding into it.
    out.push_back("variant \"" + x.name + "\" reads " + numerics::format_name(x.policy.input) +
                  " inputs but its ratio reference \"" + r.name + "\" reads " +
                  numerics::format_name(r.policy.input) +
                  ": its ratio_* columns compare errors on differently rounded inputs; point "
                  "\"ratio_to\" at a baseline with " +
                  numerics::format_name(x.policy.input) + " inputs if that is not what you meant");
  }
  return out;
}

Config parse_config(std::string_view text, std::span<const std::string> overrides) {
  if (const auto deep = io::json_text_error(text)) throw ConfigError("", "the JSON is " + *deep);
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
  config::check_folder_name(c.name, "name", "the default output folder results/<name>");
  // `setup` is the SLURM scripts' prologue (lib/experiment/cluster): `attndev slurm` takes it out
  // before parsing; here it is only accepted, so that one config serves run and slurm alike.
  if (root.contains("setup")) {
    const json& setup = root["setup"];
    bool lines = setup.is_string() || setup.is_array();
    if (setup.is_array())
      for (const json& line : setup) lines = lines && line.is_string();
    require_type(setup, "setup", lines, "a string or a list of strings (shell lines)");
  }
  if (root.contains("description")) {
    require_type(root["description"], "description", root["description"].is_string(), "a string");
    c.description = root["description"].get<std::string>();
  }
  c.axes = parse_axes(root, overridden);
  c.zip = parse_zip(root, c.axes);
  c.constraints = parse_constraints(root);
  c.seeds = parse_trials(root);
  if (c.seeds.size() > 1 && !std::get<InputsFile>(c.axis("inputs").values.front()).path.empty())
    throw ConfigError("trials",
                      "inputs read from files (axes.inputs) draw nothing from a seed, so "
                      "every trial would repeat the first; use one trial");
  c.variant_axes = parse_variant_axes(root, overridden);
  c.variants = parse_variants(root, c.variant_axes);
  c.metrics = parse_metrics(root);
  if (root.contains("dump")) {
    require_type(root["dump"], "dump", root["dump"].is_boolean(), "true or false");
    c.dump = root["dump"].get<bool>();
  }
  if (root.contains("backend")) {
    const json& b = root["backend"];
    require_type(b, "backend", b.is_string(), "\"cpu\" or \"cuda\"");
    const std::string name = b.get<std::string>();
    if (name != "cpu" && name != "cuda")
      throw ConfigError("backend", "unknown run-level backend \"" + name + "\"" +
                                       did_you_mean(name, kRunBackendNames) +
                                       "; \"cpu\" (the default) or \"cuda\" (inputs, golden and "
                                       "emulated variants on the GPU)");
    c.backend = name == "cuda" ? Backend::cuda : Backend::cpu;
  }
  if (root.contains("reference")) {
    const json& r = root["reference"];
    require_type(r, "reference", r.is_string(),
                 "\"golden\" or the name of a variant whose output the others are compared with");
    c.reference = r.get<std::string>();
    std::vector<std::string_view> names = {kGoldenReference};
    for (const Variant& v : c.variants) names.push_back(v.name);
    if (std::find(names.begin(), names.end(), c.reference) == names.end())
      throw ConfigError("reference",
                        "no variant named \"" + c.reference + "\"" +
                            did_you_mean(c.reference, names) +
                            "; \"golden\" or one of: " + join_names(std::span(names).subspan(1)));
  }
  c.effective = root;
  c.hash = config_hash(root);
  c.points_hash = points_hash(root);
  c.variant_keys = make_variant_keys(c);
  return c;
}

}  // namespace attndev::experiment
