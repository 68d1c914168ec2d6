#include "experiment/spec/config.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "config/keys.hpp"
#include "config/names.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "experiment/spec/external_template.hpp"
#include "experiment/spec/inputs.hpp"
#include "experiment/spec/stable_hash.hpp"
#include "io/json_depth.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

using nlohmann::json;

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::cpu:
      return "cpu";
    case Backend::cuda:
      return "cuda";
    case Backend::external:
      return "external";
  }
  return "?";
}

std::string variant_algorithm_name(const Variant& variant) {
  if (variant.external) return "external";
  if (!variant.kernel.empty()) return variant.kernel;
  return attention::algorithm_name(variant.algorithm);
}

namespace {

// Sizes beyond these are typos (an extra zero), not experiments: the baseline materializes
// N_q x N_kv scores per head, and the emulator runs on a CPU.
constexpr long long kMaxExtent = 1 << 20;
constexpr long long kMaxBatchHeads = 1 << 16;
constexpr std::size_t kMaxTrials = 1 << 20;

constexpr std::string_view kTopKeys[] = {"name",        "description", "axes",     "zip",
                                         "constraints", "trials",      "variants", "metrics",
                                         "reference",   "dump",        "setup",    "backend"};
constexpr std::string_view kVariantKeys[] = {"name",      "algorithm", "policy",
                                             "backend",   "baseline",  "ratio_to",
                                             "reference", "block_r",   "block_c"};
constexpr std::string_view kExternalVariantKeys[] = {"name",     "external", "format",   "timeout",
                                                     "baseline", "ratio_to", "reference"};
constexpr std::string_view kTrialKeys[] = {"count", "seed", "seeds"};
constexpr std::string_view kConstraintKeys[] = {"require", "reason"};
constexpr std::string_view kBackendNames[] = {"cpu", "cuda"};
constexpr std::string_view kScalePlacements[] = {"scores", "query"};
// Axes a constraint may compare: the integer ones.
constexpr std::string_view kNumericAxes[] = {"batch",    "heads",   "seq_len", "seq_len_kv",
                                             "head_dim", "block_r", "block_c"};

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
    const auto names = every_axis_name();
    if (std::find(names.begin(), names.end(), key) == names.end())
      throw ConfigError("-a " + key, "unknown axis \"" + key + "\"" + did_you_mean(key, names) +
                                         "; axes: " + join_names(names));
    if (value_text.empty())
      throw ConfigError("-a " + key,
                        "empty value; give a value or a list, e.g. -a " + key + "=[1,2]");
    if (const auto deep = io::json_depth_error(value_text))
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

std::vector<std::string_view> algorithm_names() {
  std::vector<std::string_view> names;
  for (attention::Algorithm a : attention::kEveryAlgorithm)
    names.push_back(attention::algorithm_name(a));
  names.push_back(kTensorCoreKernel);
  return names;
}

Backend parse_backend(const json& v, const std::string& path) {
  require_type(v, path, v.is_string(), "\"cpu\" or \"cuda\"");
  const std::string b = v.get<std::string>();
  if (b == "cpu") return Backend::cpu;
  if (b == "cuda") return Backend::cuda;
  if (b == "external")
    throw ConfigError(path,
                      "an external variant is written {\"name\": ..., \"external\": "
                      "\"COMMAND {inputs} {output}\"}, without \"backend\"");
  throw ConfigError(path, "unknown backend \"" + b + "\"" + did_you_mean(b, kBackendNames) +
                              "; valid: cpu, cuda");
}

// The placeholders an external command may use: the files, and every axis of the point.
std::vector<std::string_view> placeholder_names() {
  std::vector<std::string_view> names = {"inputs", "output", "format"};
  for (std::string_view axis : kAxisNames)
    if (axis != "inputs") names.push_back(axis);
  return names;
}

// The placeholders of a per-point command: known names, {inputs} and {output} present.
void parse_command_placeholders(const std::string& path, Variant::External& e) {
  const auto names = placeholder_names();
  std::vector<std::string> used;
  for (std::size_t open = e.command.find('{'); open != std::string::npos;
       open = e.command.find('{', open + 1)) {
    if (open > 0 && e.command[open - 1] == '$') continue;  // ${VAR} is the shell's
    const std::size_t close = e.command.find('}', open);
    if (close == std::string::npos)
      throw ConfigError(config::join_path(path, "external"),
                        "unclosed '{' at position " + std::to_string(open) + "; placeholders are " +
                            join_names(names) + " in braces, e.g. {inputs}");
    const std::string name = e.command.substr(open + 1, close - open - 1);
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw ConfigError(config::join_path(path, "external"), "unknown placeholder {" + name + "}" +
                                                                 did_you_mean(name, names) +
                                                                 "; valid: " + join_names(names));
    used.push_back(name);
  }
  // Known names, but placed where a nested shell could parse their values (inside quotes).
  if (const auto problem = external_template_problem(e.command))
    throw ConfigError(config::join_path(path, "external"), *problem);
  for (const char* required : {"inputs", "output"})
    if (std::find(used.begin(), used.end(), required) == used.end())
      throw ConfigError(config::join_path(path, "external"),
                        std::string("the command must name the {") + required +
                            "} file: attndev writes Q, K, V to {inputs} (safetensors) and reads O "
                            "from {output} (safetensors or npy)");
  e.tile_dependent = std::find(used.begin(), used.end(), "block_r") != used.end() ||
                     std::find(used.begin(), used.end(), "block_c") != used.end();
}

constexpr std::string_view kWorkerKeys[] = {"worker", "tiles", "start_timeout"};

// `"external": {"worker": COMMAND, "tiles": BOOL, "start_timeout": S}`: a long-lived process sent
// one point at a time (experiment/run/external_worker.hpp). Its command is started once, so a
// point's placeholder would have no value: each request carries the paths, format and axes as JSON
// instead.
void parse_worker(const json& object, const std::string& path, Variant::External& e) {
  check_keys(object, path, kWorkerKeys);
  const std::string worker_path = config::join_path(path, "worker");
  if (!object.contains("worker"))
    throw ConfigError(worker_path,
                      "missing; a worker variant is written \"external\": {\"worker\": \"python3 "
                      "-m attndev.worker module:function\"} (a per-point command is a string)");
  const json& command = object["worker"];
  require_type(command, worker_path, command.is_string() && !command.get<std::string>().empty(),
               "a command line such as \"python3 -m attndev.worker my_kernel:attention\"");
  e.command = command.get<std::string>();
  e.worker = true;
  for (std::string_view name : placeholder_names()) {
    std::string placeholder = "{";
    placeholder.append(name).push_back('}');
    if (e.command.find(placeholder) != std::string::npos)
      throw ConfigError(worker_path, "a worker's command takes no placeholder (" + placeholder +
                                         "): it starts once per run, and each request gives "
                                         "the point's inputs, output, format and axes as JSON");
  }
  if (object.contains("tiles")) {
    const json& t = object["tiles"];
    require_type(t, config::join_path(path, "tiles"), t.is_boolean(),
                 "true (the worker reads block_r/block_c: called once per tile point) or false");
    e.tile_dependent = t.get<bool>();
  }
}

// Seconds in (0, one week]: `timeout`, `start_timeout`.
double parse_seconds(const json& t, const std::string& path) {
  require_type(t, path, t.is_number() && t.get<double>() > 0 && t.get<double>() <= 7 * 24 * 3600.0,
               "seconds, a number in (0, 604800]");
  return t.get<double>();
}

Variant::External parse_external(const json& v, const std::string& path) {
  Variant::External e;
  const json& command = v["external"];
  if (command.is_object()) {
    parse_worker(command, config::join_path(path, "external"), e);
  } else {
    require_type(command, config::join_path(path, "external"),
                 command.is_string() && !command.get<std::string>().empty(),
                 "a command line such as \"python3 my_kernel.py {inputs} {output}\", or an "
                 "object {\"worker\": COMMAND}");
    e.command = command.get<std::string>();
    parse_command_placeholders(path, e);
  }
  if (v.contains("timeout"))
    e.timeout_s = parse_seconds(v["timeout"], config::join_path(path, "timeout"));
  e.start_timeout_s = std::max(e.timeout_s, 60.0);
  if (command.is_object() && command.contains("start_timeout"))
    e.start_timeout_s =
        parse_seconds(command["start_timeout"], config::join_path(path, "external.start_timeout"));
  return e;
}

}  // namespace

Variant parse_variant(const json& v, const std::string& path) {
  require_type(v, path, v.is_object(), "an object {\"algorithm\": ..., \"policy\": ...}");
  Variant variant;
  if (v.contains("external")) {
    check_keys(v, path, kExternalVariantKeys);
    variant.external = parse_external(v, path);
    variant.backend = Backend::external;
    if (!v.contains("name"))
      throw ConfigError(config::join_path(path, "name"),
                        "missing; an external variant needs a name");
    numerics::Format format = numerics::Format::fp32;
    if (v.contains("format")) {
      std::vector<std::string_view> formats;
      for (numerics::Format f : {numerics::Format::fp64, numerics::Format::fp32,
                                 numerics::Format::fp16, numerics::Format::bf16})
        formats.push_back(numerics::format_name(f));
      const json& f = v["format"];
      require_type(f, config::join_path(path, "format"), f.is_string(), "a format name");
      const std::string name = f.get<std::string>();
      if (!numerics::parse_format(name, format) ||
          std::find(formats.begin(), formats.end(), numerics::format_name(format)) == formats.end())
        throw ConfigError(config::join_path(path, "format"),
                          "\"" + name + "\" cannot be exchanged through a tensor file" +
                              did_you_mean(name, formats) + "; valid: " + join_names(formats));
    }
    // Q, K, V are rounded to `format` and written in it; O is expected in it (its ulps, max_rel's
    // floor). What the command does between is its own: the policy says only where its data lives.
    variant.policy = numerics::PrecisionPolicy{
        format, format, format, format, format, format, format, true, numerics::Overflow::saturate};
    variant.policy_label = numerics::format_name(format);
  } else {
    check_keys(v, path, kVariantKeys);
    const auto names = algorithm_names();
    if (!v.contains("algorithm"))
      throw ConfigError(config::join_path(path, "algorithm"),
                        "missing; one of " + join_names(names) +
                            ", or \"external\": \"COMMAND\" for a kernel "
                            "outside attndev");
    require_type(v["algorithm"], config::join_path(path, "algorithm"), v["algorithm"].is_string(),
                 "a string");
    const std::string alg = v["algorithm"].get<std::string>();
    if (alg == kTensorCoreKernel) {
      // The tensor-core FA-2 kernel: the flash2 algorithm, another implementation of it.
      variant.algorithm = attention::Algorithm::flash2;
      variant.kernel = alg;
    } else if (!attention::parse_algorithm(alg, variant.algorithm)) {
      throw ConfigError(config::join_path(path, "algorithm"), "unknown algorithm \"" + alg + "\"" +
                                                                  did_you_mean(alg, names) +
                                                                  "; valid: " + join_names(names));
    }
    if (!v.contains("policy"))
      throw ConfigError(config::join_path(path, "policy"),
                        "missing; a preset name such as \"kernel-bf16\" or an object");
    std::string error;
    if (!parse_policy(v["policy"], variant.policy, error))
      throw ConfigError(config::join_path(path, "policy"), error);
    variant.policy_label = policy_label(variant.policy);
    if (v.contains("backend"))
      variant.backend = parse_backend(v["backend"], config::join_path(path, "backend"));
    for (const auto& [key, tile] :
         {std::pair{"block_r", &variant.block_r}, std::pair{"block_c", &variant.block_c}})
      if (v.contains(key))
        *tile = static_cast<int>(positive_int(v[key], config::join_path(path, key), kMaxExtent));
    if (!variant.kernel.empty() && variant.backend != Backend::cuda)
      throw ConfigError(config::join_path(path, "backend"),
                        "\"" + variant.kernel +
                            "\" is a CUDA kernel (tensor cores): add "
                            "\"backend\": \"cuda\" (--backend cuda); without "
                            "a GPU its rows say skipped, with the reason");
  }
  if (v.contains("baseline")) {
    require_type(v["baseline"], config::join_path(path, "baseline"), v["baseline"].is_boolean(),
                 "true or false");
    variant.baseline = v["baseline"].get<bool>();
  }
  if (v.contains("ratio_to")) {
    require_type(v["ratio_to"], config::join_path(path, "ratio_to"), v["ratio_to"].is_string(),
                 "a variant name");
    variant.ratio_to = v["ratio_to"].get<std::string>();
  }
  if (v.contains("reference")) {
    require_type(v["reference"], config::join_path(path, "reference"), v["reference"].is_string(),
                 "a variant name (or \"golden\")");
    variant.reference = v["reference"].get<std::string>();
  }
  if (v.contains("name")) {
    require_type(v["name"], config::join_path(path, "name"), v["name"].is_string(), "a string");
    variant.name = v["name"].get<std::string>();
    if (variant.name.empty()) throw ConfigError(config::join_path(path, "name"), "empty name");
    if (variant.name == kGoldenReference)
      throw ConfigError(config::join_path(path, "name"),
                        "\"golden\" names the FP64 golden; pick another name");
  } else {
    variant.name = variant_algorithm_name(variant) + "-" + variant.policy_label +
                   (variant.backend == Backend::cuda ? "-cuda" : "");
  }
  return variant;
}

namespace {

using VariantAxes = std::vector<std::pair<std::string, std::vector<std::string>>>;

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
                                       did_you_mean(name, kBackendNames) +
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
  return c;
}

}  // namespace attndev::experiment
