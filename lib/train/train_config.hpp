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
//    "snapshot_every": 50, "log_every": 10, "text": "path/to/file.txt" (default: fortunes-min)}
// A study config has "base" (a run config), "runs" (each a name plus keys merged over base),
// "pairs" ({"name", "kind": "flash"|"seed"|"lowprec"|"other", "a", "b"}), "ratios"
// ({"name", "numerator": pair, "denominator": pair}) and "quick" (keys merged over base by
// --quick). Unknown keys are errors with a suggestion; every error names its JSON path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"
#include "train/dense.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"

namespace attndev::train {

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
  std::string text;       // "" -> the default corpus
  nlohmann::json source;  // the resolved JSON of this run, for provenance
};

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
  std::vector<TrainConfig> runs;
  std::vector<PairSpec> pairs;
  std::vector<RatioSpec> ratios;
};

// Is this JSON a study (has "runs")?
bool is_study(const nlohmann::json& j);

// Throw experiment::ConfigError naming the JSON path. `path` prefixes every error path.
TrainConfig parse_train_config(const nlohmann::json& j, const std::string& path = "");
// quick: merge the study's "quick" object over "base" first (the CI form).
StudyConfig parse_study_config(const nlohmann::json& j, bool quick);

// Reads and parses a JSON file; a missing file or a syntax error is a ConfigError with the path.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace attndev::train
