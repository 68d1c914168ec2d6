// The weight-deviation study: train several runs, then compare their weights snapshot by
// snapshot, tensor by tensor, with the 1-D Wasserstein-1 distance between value distributions
// and the max |a - b| (Golden et al. 2024, Figs. 7-8).
//
// Output folder:
//   <run>/loss.csv, <run>/snapshots/*.safetensors, <run>/run.json   (trainer.hpp)
//   weights_comparison.csv   step,pair,kind,run_a,run_b,tensor,w1,max_abs_diff
//                            (tensor "all" = every parameter value pooled)
//   ratios.csv               step,ratio_name,tensor,numerator_w1,denominator_w1,ratio
//   summary.md               runs, final-step distances per tensor, ratio per step
//   study.json               the resolved config, provenance, file list
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/tensor_file.hpp"
#include "train/trainer.hpp"

namespace attndev::train {

struct WeightDistance {
  std::string tensor;  // parameter name, or "all"
  double w1 = 0;       // Wasserstein-1 between the two value distributions
  double max_abs = 0;  // max |a_i - b_i| (elementwise, same index)
  std::int64_t count = 0;
};

// Pairs tensors by name (both sides must hold the same names and shapes, else
// std::invalid_argument naming the tensor). Appends the pooled "all" row last.
std::vector<WeightDistance> compare_weights(const std::vector<io::NamedTensor>& a,
                                            const std::vector<io::NamedTensor>& b);

struct StudyOptions {
  std::filesystem::path out_dir;
  int threads = 1;
  std::string text;  // overrides every run's text ("" keeps the config's)
  std::string command_line;
  std::function<void(const std::string& run, const StepLog&)> progress;
};

struct StudyResult {
  std::vector<std::string> files;  // written, relative to out_dir
  int compared_rows = 0;           // (step, pair, tensor) rows with a distance
};

// Trains a single run into out_dir (loss.csv, snapshots, run.json).
RunResult run_single(const TrainConfig& cfg, const Corpus& corpus, const StudyOptions& options,
                     const std::filesystem::path& out_dir);

// Trains every run, then writes the comparison files. Throws on I/O or training failure.
StudyResult run_study(const StudyConfig& study, const StudyOptions& options);

}  // namespace attndev::train
