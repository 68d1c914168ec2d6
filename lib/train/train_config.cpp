#include "train/train_config.hpp"

#include <fstream>
#include <set>
#include <span>
#include <sstream>
#include <string_view>

#include "config/keys.hpp"
#include "config/names.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "io/atomic_file.hpp"
#include "io/json_depth.hpp"
#include "train/corpus.hpp"

namespace attndev::train {
namespace {

using config::check_keys;  // the one key rule of every config: '_' keys are comments
using config::ConfigError;
using nlohmann::json;

std::string join(const std::string& path, const std::string& key) {
  return config::join_path(path, key);
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
    "name",      "description", "model",     "optimizer", "steps",       "batch",
    "seed",      "data_seed",   "precision", "attention", "loss_scale",  "snapshot_every",
    "log_every", "text",        "corpus",    "shadow",    "shadow_steps"};
constexpr std::string_view kShadowKeys[] = {"name", "algorithm", "policy", "block_r", "block_c"};
constexpr std::string_view kEveryKeys[] = {"every"};
constexpr std::string_view kModelKeys[] = {"d_model", "heads", "layers", "context", "mlp_hidden"};
constexpr std::string_view kOptimKeys[] = {"lr",    "min_lr_ratio", "warmup_steps", "beta1",
                                           "beta2", "eps",          "weight_decay", "grad_clip"};
constexpr std::string_view kAttnKeys[] = {"algorithm", "policy", "block_r", "block_c"};
constexpr std::string_view kScaleKeys[] = {"init", "growth_interval"};
constexpr std::string_view kStudyKeys[] = {"name",  "description", "base",
                                           "runs",  "pairs",       "ratios",
                                           "quick", "replicates",  "replicate_seed_stride"};
constexpr std::string_view kPairKeys[] = {"name", "kind", "a", "b"};
constexpr std::string_view kRatioKeys[] = {"name", "numerator", "denominator"};
constexpr std::string_view kPairKinds[] = {"flash", "seed", "lowprec", "other"};

// A shadow is forward-only, so any algorithm will do; what it cannot take (an fp8 Hadamard on a
// head dimension that is not a power of 2, ...) is found here by one call on zeros of the run's
// shape, so a bad shadow fails before training starts rather than at its first shadow step.
void check_shadow_runs(const ShadowSpec& s, const ModelConfig& m, const std::string& path) {
  const int d = m.d_model / m.heads;
  attention::Inputs in;
  in.q = attention::Tensor(1, 1, m.context, d);  // (B, H, N, d) of zeros
  in.k = in.q;
  in.v = in.q;
  attention::Options o;
  o.causal = true;
  o.block_r = s.block_r;
  o.block_c = s.block_c;
  o.threads = 1;
  try {
    attention::run(s.algorithm, s.policy, in, o);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(path, std::string("this shadow cannot run on the model's attention (N = ") +
                                std::to_string(m.context) + ", d = " + std::to_string(d) +
                                "): " + e.what());
  }
}

std::vector<ShadowSpec> parse_shadows(const json& j, const std::string& path,
                                      const TrainConfig& c) {
  if (!j.is_array())
    throw ConfigError(path, "must be an array of {\"algorithm\", \"policy\", ...} objects");
  std::vector<ShadowSpec> shadows;
  std::set<std::string> names{driver_name(c)};
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const json& o = j[i];
    check_keys(o, p, kShadowKeys);
    ShadowSpec s;
    if (!o.contains("algorithm"))
      throw ConfigError(p + ".algorithm", "a shadow needs an algorithm (e.g. \"baseline\")");
    const std::string alg = get_str(o, p, "algorithm", "");
    if (!attention::parse_algorithm(alg, s.algorithm)) {
      std::vector<std::string_view> valid;
      for (attention::Algorithm a : attention::kEveryAlgorithm)
        valid.push_back(attention::algorithm_name(a));
      throw ConfigError(p + ".algorithm", "unknown algorithm \"" + alg + "\"" +
                                              config::did_you_mean(alg, valid) +
                                              "; valid: " + config::join_names(valid));
    }
    s.policy = c.policy;
    if (o.contains("policy")) {
      std::string error;
      if (!config::parse_policy(o.at("policy"), s.policy, error))
        throw ConfigError(p + ".policy", error);
    }
    s.block_r = get_int(o, p, "block_r", c.block_r, 1, 65536);
    s.block_c = get_int(o, p, "block_c", c.block_c, 1, 65536);
    s.name =
        std::string(attention::algorithm_name(s.algorithm)) + "/" + config::policy_label(s.policy);
    if (s.block_r != c.block_r || s.block_c != c.block_c)
      s.name += "/" + std::to_string(s.block_r) + "x" + std::to_string(s.block_c);
    s.name = get_str(o, p, "name", s.name);
    if (s.name.empty()) throw ConfigError(p + ".name", "must not be empty");
    if (!names.insert(s.name).second)
      throw ConfigError(p + ".name", "variant name \"" + s.name +
                                         "\" is taken (by the driving attention or another "
                                         "shadow): give this shadow a \"name\"");
    check_shadow_runs(s, c.model, p);
    shadows.push_back(std::move(s));
  }
  return shadows;
}

// Step s means the forward pass of update s, on the weights of snapshot step_s.
std::vector<int> parse_shadow_steps(const json& j, const std::string& path, int steps) {
  std::set<int> out;
  if (j.is_object()) {
    check_keys(j, path, kEveryKeys);
    if (!j.contains("every")) throw ConfigError(path + ".every", "missing (e.g. {\"every\": 50})");
    const int every = get_int(j, path, "every", 1, 1, 1000000);
    for (int s = 0; s < steps; s += every) out.insert(s);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      const json& v = j[i];
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= steps)
        throw ConfigError(path + "[" + std::to_string(i) + "]",
                          "must be a step in [0, " + std::to_string(steps - 1) +
                              "] (step s is the forward of update s; steps = " +
                              std::to_string(steps) + "), got " + v.dump());
      out.insert(v.get<int>());
    }
  } else {
    throw ConfigError(path, "must be an array of steps or {\"every\": N}");
  }
  return {out.begin(), out.end()};
}

}  // namespace

std::string driver_name(const TrainConfig& cfg) {
  return std::string(attention::algorithm_name(cfg.algorithm)) + "/" +
         config::policy_label(cfg.policy);
}

TrainConfig replicate_of(const TrainConfig& run, int r, std::uint64_t stride) {
  TrainConfig c = run;
  c.replicate = r;
  c.seed = run.seed + std::uint64_t(r) * stride;
  c.data_seed = run.data_seed + std::uint64_t(r) * stride;
  return c;
}

bool is_study(const json& j) {
  return j.is_object() && j.contains("runs");
}

TrainConfig parse_train_config(const json& j, const std::string& path) {
  check_keys(j, path, kRunKeys);
  TrainConfig c;
  c.source = j;
  c.name = get_str(j, path, "name", c.name);
  config::check_folder_name(c.name, join(path, "name"), "the run's output folder");
  c.description = get_str(j, path, "description", "");
  c.steps = get_int(j, path, "steps", c.steps, 1, 1000000);
  c.batch = get_int(j, path, "batch", c.batch, 1, 4096);
  c.seed = std::uint64_t(get_int(j, path, "seed", int(c.seed), 0, 2147483647));
  c.data_seed = std::uint64_t(get_int(j, path, "data_seed", int(c.data_seed), 0, 2147483647));
  c.snapshot_every = get_int(j, path, "snapshot_every", c.snapshot_every, 1, 1000000);
  c.log_every = get_int(j, path, "log_every", c.log_every, 1, 1000000);
  c.text = get_str(j, path, "text", "");
  c.corpus = get_str(j, path, "corpus", c.corpus);
  if (!c.text.empty() && j.contains("corpus"))
    throw ConfigError(join(path, "corpus"),
                      "give \"text\" (a file) or \"corpus\" (a name), not both");
  if (!find_corpus(c.corpus)) {
    std::vector<std::string_view> valid;
    for (const NamedCorpus& n : kCorpora) valid.push_back(n.name);
    throw ConfigError(join(path, "corpus"), "unknown corpus \"" + c.corpus + "\"" +
                                                config::did_you_mean(c.corpus, valid) +
                                                "; valid: " + config::join_names(valid) +
                                                " (or \"text\": a file)");
  }
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
      if (!config::parse_policy(a.at("policy"), c.policy, error))
        throw ConfigError(join(p, "policy"), error);
      // Refused here, before any output exists, rather than by attention::backward at step 1.
      if (c.policy.model == numerics::Model::framework)
        throw ConfigError(join(p, "policy"),
                          "\"" + config::policy_label(c.policy) +
                              "\" uses the framework rounding model, which the backward pass "
                              "does not model: train with a kernel-model policy (kernel-bf16, "
                              "torch-math-bf16, fp32, ...); a framework policy can run as a "
                              "\"shadow\" variant (forward only)");
      // The tensor-core model covers the forward's GEMMs; the backward's are FMA chains.
      if (c.policy.mma != numerics::mma::Arch::none)
        throw ConfigError(join(p, "policy"),
                          "\"mma\" (the tensor-core model) covers the forward pass only, not "
                          "the backward: train without it; a policy with \"mma\" can run as a "
                          "\"shadow\" variant (forward only)");
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
  if (j.contains("shadow")) c.shadows = parse_shadows(j.at("shadow"), join(path, "shadow"), c);
  if (j.contains("shadow_steps")) {
    if (!j.contains("shadow"))
      throw ConfigError(join(path, "shadow_steps"), "given without \"shadow\" variants to compute");
    c.shadow_steps = parse_shadow_steps(j.at("shadow_steps"), join(path, "shadow_steps"), c.steps);
  } else if (!c.shadows.empty()) {
    // Default: the snapshot steps (step_0, step_50, ... name the weights the forward ran on).
    for (int s = 0; s < c.steps; s += c.snapshot_every) c.shadow_steps.push_back(s);
  }
  return c;
}

StudyConfig parse_study_config(const json& j, bool quick) {
  check_keys(j, "", kStudyKeys);
  StudyConfig s;
  s.name = get_str(j, "", "name", "study");
  config::check_folder_name(s.name, "name", "the default output folder results/train/<name>");
  s.description = get_str(j, "", "description", "");
  json base = j.contains("base") ? j.at("base") : json::object();
  if (!base.is_object()) throw ConfigError("base", "must be a JSON object (a run config)");
  s.replicates = get_int(j, "", "replicates", 1, 1, 1000);
  if (quick) {
    if (!j.contains("quick"))
      throw ConfigError("quick",
                        "--quick needs a \"quick\" object in the config (keys merged over base)");
    json q = j.at("quick");
    if (!q.is_object()) throw ConfigError("quick", "must be a JSON object (keys merged over base)");
    // "replicates" is a key of the study, not of a run: the quick form may shrink it.
    if (q.contains("replicates")) {
      s.replicates = get_int(q, "quick", "replicates", s.replicates, 1, 1000);
      q.erase("replicates");
    }
    base.merge_patch(q);
  }
  s.replicate_seed_stride =
      std::uint64_t(get_int(j, "", "replicate_seed_stride", 1000, 1, 1000000000));
  if (!j.contains("runs") || !j.at("runs").is_array() || j.at("runs").empty())
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
  if (s.replicates > 1) {
    // Replicate r moves every seed by r * stride: the stride must exceed the spread of the runs'
    // seeds, else a replicate would reuse another run's seed and not be fresh.
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const TrainConfig& c : s.runs)
      for (std::uint64_t v : {c.seed, c.data_seed}) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    if (s.replicate_seed_stride <= hi - lo)
      throw ConfigError("replicate_seed_stride",
                        std::to_string(s.replicate_seed_stride) +
                            " is not larger than the spread of the runs' seeds and data seeds (" +
                            std::to_string(hi - lo) + "): replicates would reuse seeds; raise it");
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
                                           config::did_you_mean(ps.kind, kPairKinds) +
                                           "; valid: " + config::join_names(kPairKinds));
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
  std::string text;
  try {
    text = io::read_file(path, io::kMaxConfigBytes);
  } catch (const std::runtime_error& e) {
    throw ConfigError(path.string(), e.what());
  }
  if (const auto deep = io::json_depth_error(text, io::kMaxJsonDepth, /*comments=*/true))
    throw ConfigError(path.string(), "the JSON is " + *deep);
  try {
    return json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw ConfigError(path.string(), std::string("is not valid JSON: ") + e.what());
  }
}

}  // namespace attndev::train
