// `attndev train CONFIG`: one training run, or a study of several runs and the pairs to compare.
//
// A run config (configs/train/*.json):
//   {"name": "tiny-flash2", "steps": 300, "batch": 8, "seed": 1, "data_seed": 0,
//    "precision": "fp32" | "bf16" | "fp16",
//    "attention": {"algorithm": "flash2", "policy": "fp32", "block_r": 16, "block_c": 16},
//    "model": {"d_model": 64, "heads": 4, "layers": 2, "context": 64, "mlp_hidden": 256},
//    "optimizer": {"lr": 3e-3, "min_lr_ratio": 0.1, "warmup_steps": 20, "beta1": 0.9,
//                  "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.01, "grad_clip": 1.0},
//    "loss_scale": {"init": 65536, "growth_interval": 200},   (fp16 only)
//    "snapshot_every": 50, "log_every": 10,
//    "corpus": "fortunes-min" | "fortunes" (a named corpus, corpus.hpp) or "text": "file.txt",
//    "shadow": [{"algorithm": "baseline", "policy": "torch-math-bf16", "block_r": 16,
//                "block_c": 16, "name": "..."}],        (in-model comparison, in_model.hpp)
//    "shadow_steps": [0, 100, 200] | {"every": 50}}     (default: the snapshot steps)
// A study config has "base" (a run config), "runs" (each a name plus keys merged over base),
// "pairs" ({"name", "kind": "flash"|"seed"|"lowprec"|"other", "a", "b"}), "ratios"
// ({"name", "numerator": pair, "denominator": pair}), "replicates" (K >= 1: every run trained K
// times, replicate r adding r * "replicate_seed_stride" (default 1000) to its seed and data_seed)
// and "quick" (keys merged over base by --quick; it may also set "replicates"). Unknown keys are
// errors with a suggestion; every error names its JSON path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"
#include "train/config_types.hpp"

namespace attndev::train {

// A variant computed beside the one that drives training, on the same Q, K, V, at the shadow
// steps only; it never feeds back into training (in_model.hpp).
struct ShadowSpec {
  std::string name;  // default "<algorithm>/<policy label>[/Br x Bc]"
  attention::Algorithm algorithm = attention::Algorithm::baseline;
  numerics::PrecisionPolicy policy = numerics::kGoldenPolicy;
  int block_r = 16;  // default: the driving attention's tiles
  int block_c = 16;
};

struct TrainConfig {
  std::string name = "train";
  std::string description;
  ModelConfig model;
  AdamWConfig optimizer;
  int steps = 300;
  int batch = 8;
  std::uint64_t seed = 1;       // initialization
  std::uint64_t data_seed = 0;  // batch order: kept apart so a seed pair differs in init only
  Precision precision = Precision::fp32;
  attention::Algorithm algorithm = attention::Algorithm::flash2;
  numerics::PrecisionPolicy policy = numerics::find_preset("fp32")->policy;
  int block_r = 16;
  int block_c = 16;
  double loss_scale_init = 65536.0;  // fp16: dynamic loss scaling starts here
  int loss_scale_growth_interval = 200;
  int snapshot_every = 50;
  int log_every = 10;
  std::string text;                     // a text file; "" -> the named corpus
  std::string corpus = "fortunes-min";  // a named corpus (corpus.hpp), used when text is ""
  std::vector<ShadowSpec> shadows;
  std::vector<int> shadow_steps;  // sorted, unique, each in [0, steps)
  int replicate = 0;              // which replicate of a study this run is (0 for a single run)
  nlohmann::json source;          // the resolved JSON of this run, for provenance
};

// The driving attention of a run as a ShadowSpec-like name: "flash2/kernel-bf16".
std::string driver_name(const TrainConfig& cfg);

struct PairSpec {
  std::string name;
  std::string kind;  // flash | seed | lowprec | other
  std::string a, b;  // run names
};

struct RatioSpec {
  std::string name, numerator, denominator;  // pair names
};

struct StudyConfig {
  std::string name;
  std::string description;
  std::vector<TrainConfig> runs;  // replicate 0 of every run, in config order
  int replicates = 1;
  std::uint64_t replicate_seed_stride = 1000;
  std::vector<PairSpec> pairs;
  std::vector<RatioSpec> ratios;
};

// Is this JSON a study (has "runs")?
bool is_study(const nlohmann::json& j);

// Throw config::ConfigError naming the JSON path. `path` prefixes every error path.
TrainConfig parse_train_config(const nlohmann::json& j, const std::string& path = "");
// quick: merge the study's "quick" object over "base" first (the CI form).
StudyConfig parse_study_config(const nlohmann::json& j, bool quick);

// Replicate r of a run: seed and data_seed moved by r * stride (the same offset for every run of
// the replicate, so the pairs keep their roles: a seed pair still differs in the init only).
TrainConfig replicate_of(const TrainConfig& run, int r, std::uint64_t stride);

// Reads and parses a JSON file; a missing file or a syntax error is a ConfigError with the path.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace attndev::train
