// One variant object of an experiment config: emulated (algorithm, policy, backend, tiles) or
// external (a command or a worker).
#include "experiment/spec/config_parse.hpp"

#include <algorithm>

#include "config/keys.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "experiment/spec/external_template.hpp"
#include "io/text_escape.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

using config::check_keys;
using config::did_you_mean;
using config::join_names;
using config::parse_policy;
using config::policy_label;
using config::type_name;
using config_parse::kMaxExtent;
using config_parse::positive_int;
using config_parse::require_type;
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

constexpr std::string_view kVariantKeys[] = {"name",      "algorithm", "policy",
                                             "backend",   "baseline",  "ratio_to",
                                             "reference", "block_r",   "block_c"};
constexpr std::string_view kExternalVariantKeys[] = {"name",     "external", "format",   "timeout",
                                                     "baseline", "ratio_to", "reference"};
constexpr std::string_view kBackendNames[] = {"cpu", "cuda"};

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

// A name is printed to terminals, markdown, CSV and file names: control characters (ESC, newlines)
// have no business in it, and its file name (dump_file_stem, up to 3 bytes per byte) must stay
// under the 255 bytes of a file name.
void check_variant_name(const std::string& name, const std::string& path) {
  if (!io::is_printable(name))
    throw ConfigError(path, "the name \"" + io::printable(name) +
                                "\" holds a control character or a backslash; a variant name "
                                "is printed to terminals and tables: use printable characters");
  if (name.size() > kMaxVariantNameBytes)
    throw ConfigError(path, "the name is " + std::to_string(name.size()) +
                                " bytes long, more than " + std::to_string(kMaxVariantNameBytes) +
                                "; use a shorter name");
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
    check_variant_name(variant.name, config::join_path(path, "name"));
    if (variant.name == kGoldenReference)
      throw ConfigError(config::join_path(path, "name"),
                        "\"golden\" names the FP64 golden; pick another name");
  } else {
    variant.name = variant_algorithm_name(variant) + "-" + variant.policy_label +
                   (variant.backend == Backend::cuda ? "-cuda" : "");
  }
  return variant;
}

Variant variant_from_parts(const std::string& algorithm, const numerics::PrecisionPolicy& policy,
                           const std::string& backend) {
  const json v = {
      {"algorithm", algorithm}, {"policy", config::policy_to_json(policy)}, {"backend", backend}};
  return parse_variant(v, "");
}

}  // namespace attndev::experiment
