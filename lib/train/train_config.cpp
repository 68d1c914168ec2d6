#include "train/train_config.hpp"

#include <fstream>
#include <set>
#include <span>
#include <string_view>

#include "experiment/config.hpp"
#include "experiment/policy_json.hpp"
#include "experiment/suggest.hpp"

namespace attndev::train {
namespace {

using experiment::ConfigError;
using nlohmann::json;

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void check_keys(const json& j, const std::string& path, std::span<const std::string_view> valid) {
  if (!j.is_object())
    throw ConfigError(path.empty() ? "(top level)" : path, "must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view v : valid) known = known || v == key;
    if (!known)
      throw ConfigError(join(path, key), "unknown key" + experiment::did_you_mean(key, valid) +
                                             "; valid: " + experiment::join_names(valid));
  }
}

int get_int(const json& j, const std::string& path, const char* key, int fallback, int lo, int hi) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    throw ConfigError(join(path, key), "must be an integer in [" + std::to_string(lo) + ", " +
                                           std::to_string(hi) + "], got " + v.dump());
  return v.get<int>();
}

double get_num(const json& j, const std::string& path, const char* key, double fallback, double lo,
               double hi) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    throw ConfigError(join(path, key), "must be a number in [" + std::to_string(lo) + ", " +
                                           std::to_string(hi) + "], got " + v.dump());
  return v.get<double>();
}

std::string get_str(const json& j, const std::string& path, const char* key, std::string fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_string()) throw ConfigError(join(path, key), "must be a string");
  return j.at(key).get<std::string>();
}

constexpr std::string_view kRunKeys[] = {
    "name",      "description", "model",     "optimizer",  "steps",          "batch",     "seed",
    "data_seed", "precision",   "attention", "loss_scale", "snapshot_every", "log_every", "text"};
constexpr std::string_view kModelKeys[] = {"d_model", "heads", "layers", "context", "mlp_hidden"};
constexpr std::string_view kOptimKeys[] = {"lr",    "min_lr_ratio", "warmup_steps", "beta1",
                                           "beta2", "eps",          "weight_decay", "grad_clip"};
constexpr std::string_view kAttnKeys[] = {"algorithm", "policy", "block_r", "block_c"};
constexpr std::string_view kScaleKeys[] = {"init", "growth_interval"};
constexpr std::string_view kStudyKeys[] = {"name",  "description", "base", "runs",
                                           "pairs", "ratios",      "quick"};
constexpr std::string_view kPairKeys[] = {"name", "kind", "a", "b"};
constexpr std::string_view kRatioKeys[] = {"name", "numerator", "denominator"};
constexpr std::string_view kPairKinds[] = {"flash", "seed", "lowprec", "other"};

}  // namespace

bool is_study(const json& j) {
  return j.is_object() && j.contains("runs");
}

TrainConfig parse_train_config(const json& j, const std::string& path) {
  check_keys(j, path, kRunKeys);
  TrainConfig c;
  c.source = j;
  c.name = get_str(j, path, "name", c.name);
  c.description = get_str(j, path, "description", "");
  c.steps = get_int(j, path, "steps", c.steps, 1, 1000000);
  c.batch = get_int(j, path, "batch", c.batch, 1, 4096);
  c.seed = std::uint64_t(get_int(j, path, "seed", int(c.seed), 0, 2147483647));
  c.data_seed = std::uint64_t(get_int(j, path, "data_seed", int(c.data_seed), 0, 2147483647));
  c.snapshot_every = get_int(j, path, "snapshot_every", c.snapshot_every, 1, 1000000);
  c.log_every = get_int(j, path, "log_every", c.log_every, 1, 1000000);
  c.text = get_str(j, path, "text", "");
  const std::string prec = get_str(j, path, "precision", precision_name(c.precision));
  if (!parse_precision(prec, c.precision))
    throw ConfigError(join(path, "precision"),
                      "unknown training precision \"" + prec + "\"; valid: fp64, fp32, bf16, fp16");

  if (j.contains("model")) {
    const json& m = j.at("model");
    const std::string p = join(path, "model");
    check_keys(m, p, kModelKeys);
    c.model.d_model = get_int(m, p, "d_model", c.model.d_model, 1, 4096);
    c.model.heads = get_int(m, p, "heads", c.model.heads, 1, 256);
    c.model.layers = get_int(m, p, "layers", c.model.layers, 1, 64);
    c.model.context = get_int(m, p, "context", c.model.context, 2, 65536);
    c.model.mlp_hidden = get_int(m, p, "mlp_hidden", 4 * c.model.d_model, 1, 65536);
    if (c.model.d_model % c.model.heads != 0)
      throw ConfigError(join(p, "heads"), "d_model " + std::to_string(c.model.d_model) +
                                              " must be a multiple of heads " +
                                              std::to_string(c.model.heads));
  }
  if (j.contains("optimizer")) {
    const json& o = j.at("optimizer");
    const std::string p = join(path, "optimizer");
    check_keys(o, p, kOptimKeys);
    AdamWConfig& a = c.optimizer;
    a.lr = get_num(o, p, "lr", a.lr, 0.0, 10.0);
    a.min_lr_ratio = get_num(o, p, "min_lr_ratio", a.min_lr_ratio, 0.0, 1.0);
    a.warmup_steps = get_int(o, p, "warmup_steps", a.warmup_steps, 0, 1000000);
    a.beta1 = get_num(o, p, "beta1", a.beta1, 0.0, 0.999999);
    a.beta2 = get_num(o, p, "beta2", a.beta2, 0.0, 0.999999);
    a.eps = get_num(o, p, "eps", a.eps, 0.0, 1.0);
    a.weight_decay = get_num(o, p, "weight_decay", a.weight_decay, 0.0, 10.0);
    a.grad_clip = get_num(o, p, "grad_clip", a.grad_clip, 0.0, 1e30);
  }
  if (j.contains("attention")) {
    const json& a = j.at("attention");
    const std::string p = join(path, "attention");
    check_keys(a, p, kAttnKeys);
    const std::string alg = get_str(a, p, "algorithm", attention::algorithm_name(c.algorithm));
    if (!attention::parse_algorithm(alg, c.algorithm) ||
        (c.algorithm != attention::Algorithm::baseline &&
         c.algorithm != attention::Algorithm::flash2))
      throw ConfigError(join(p, "algorithm"),
                        "\"" + alg +
                            "\" cannot be trained with: use baseline or flash2"
                            " (the algorithms with a backward)");
    if (a.contains("policy")) {
      std::string error;
      if (!experiment::parse_policy(a.at("policy"), c.policy, error))
        throw ConfigError(join(p, "policy"), error);
    }
    c.block_r = get_int(a, p, "block_r", c.block_r, 1, 65536);
    c.block_c = get_int(a, p, "block_c", c.block_c, 1, 65536);
  }
  if (j.contains("loss_scale")) {
    const json& s = j.at("loss_scale");
    const std::string p = join(path, "loss_scale");
    check_keys(s, p, kScaleKeys);
    c.loss_scale_init = get_num(s, p, "init", c.loss_scale_init, 1.0, 1e30);
    c.loss_scale_growth_interval =
        get_int(s, p, "growth_interval", c.loss_scale_growth_interval, 1, 1000000);
  }
  return c;
}

StudyConfig parse_study_config(const json& j, bool quick) {
  check_keys(j, "", kStudyKeys);
  StudyConfig s;
  s.name = get_str(j, "", "name", "study");
  s.description = get_str(j, "", "description", "");
  json base = j.contains("base") ? j.at("base") : json::object();
  if (!base.is_object()) throw ConfigError("base", "must be a JSON object (a run config)");
  if (quick) {
    if (!j.contains("quick"))
      throw ConfigError("quick",
                        "--quick needs a \"quick\" object in the config (keys merged over base)");
    base.merge_patch(j.at("quick"));
  }
  if (!j.at("runs").is_array() || j.at("runs").empty())
    throw ConfigError("runs", "must be a non-empty array of run objects");
  std::set<std::string> names;
  for (std::size_t i = 0; i < j.at("runs").size(); ++i) {
    const std::string p = "runs[" + std::to_string(i) + "]";
    const json& r = j.at("runs")[i];
    if (!r.is_object() || !r.contains("name") || !r.at("name").is_string())
      throw ConfigError(p, "each run must be an object with a \"name\" string");
    json merged = base;
    merged.merge_patch(r);
    s.runs.push_back(parse_train_config(merged, p));
    if (!names.insert(s.runs.back().name).second)
      throw ConfigError(p + ".name", "duplicate run name \"" + s.runs.back().name + "\"");
  }
  std::set<std::string> pair_names;
  if (j.contains("pairs")) {
    if (!j.at("pairs").is_array()) throw ConfigError("pairs", "must be an array");
    for (std::size_t i = 0; i < j.at("pairs").size(); ++i) {
      const std::string p = "pairs[" + std::to_string(i) + "]";
      const json& q = j.at("pairs")[i];
      check_keys(q, p, kPairKeys);
      PairSpec ps{get_str(q, p, "name", ""), get_str(q, p, "kind", "other"), get_str(q, p, "a", ""),
                  get_str(q, p, "b", "")};
      bool kind_ok = false;
      for (std::string_view k : kPairKinds) kind_ok = kind_ok || k == ps.kind;
      if (!kind_ok)
        throw ConfigError(p + ".kind", "unknown kind \"" + ps.kind + "\"" +
                                           experiment::did_you_mean(ps.kind, kPairKinds) +
                                           "; valid: " + experiment::join_names(kPairKinds));
      for (const auto& [key, run] : {std::pair{"a", ps.a}, std::pair{"b", ps.b}})
        if (!names.count(run))
          throw ConfigError(p + "." + key, "\"" + run + "\" is not the name of a run in \"runs\"");
      if (ps.name.empty()) throw ConfigError(p + ".name", "a pair needs a name");
      if (!pair_names.insert(ps.name).second)
        throw ConfigError(p + ".name", "duplicate pair name \"" + ps.name + "\"");
      s.pairs.push_back(ps);
    }
  }
  if (j.contains("ratios")) {
    if (!j.at("ratios").is_array()) throw ConfigError("ratios", "must be an array");
    for (std::size_t i = 0; i < j.at("ratios").size(); ++i) {
      const std::string p = "ratios[" + std::to_string(i) + "]";
      const json& q = j.at("ratios")[i];
      check_keys(q, p, kRatioKeys);
      RatioSpec rs{get_str(q, p, "name", "ratio"), get_str(q, p, "numerator", ""),
                   get_str(q, p, "denominator", "")};
      for (const auto& [key, pair] :
           {std::pair{"numerator", rs.numerator}, std::pair{"denominator", rs.denominator}})
        if (!pair_names.count(pair))
          throw ConfigError(p + "." + key,
                            "\"" + pair + "\" is not the name of a pair in \"pairs\"");
      s.ratios.push_back(rs);
    }
  }
  return s;
}

json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path.string(), "cannot open the config file (does it exist?)");
  try {
    return json::parse(in, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw ConfigError(path.string(), std::string("is not valid JSON: ") + e.what());
  }
}

}  // namespace attndev::train
