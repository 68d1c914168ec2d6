// The weight-deviation study: train several runs, then compare their weights snapshot by
// snapshot, tensor by tensor, with the 1-D Wasserstein-1 distance between value distributions
// and the max |a - b| (Golden et al. 2024, Figs. 7-8).
//
// With "replicates": K > 1 every run is trained K times (replicate r: seeds moved by r * stride,
// train_config.hpp), every pair is compared within each replicate, and each ratio is reported as
// mean, sample standard deviation and min-max over the K replicates.
//
// Output folder (RUN = <run> for one replicate, rep<r>/<run> for several):
//   RUN/loss.csv, RUN/snapshots/*.safetensors, RUN/run.json    (trainer.hpp)
//   RUN/in_model.csv, RUN/captures/                            (in_model.hpp)
//   weights_comparison.csv   step,replicate,pair,kind,run_a,run_b,seed_a,seed_b,tensor,w1,
//                            max_abs_diff (tensor "all" = every parameter value pooled)
//   ratios.csv               step,replicate,ratio_name,tensor,numerator_w1,denominator_w1,ratio
//   pair_stats.csv           step,pair,kind,tensor,replicates,w1_mean,w1_std,w1_min,w1_max
//   ratio_stats.csv          step,ratio_name,tensor,replicates,mean,std,min,max
//   in_model.csv             every run's in_model.csv rows, when a run has shadows
//   summary.md               runs, pooled W1 and ratios per step (mean +- std [min, max]),
//                            final-step distances per tensor, the in-model table
//   study.json               the resolved config, provenance, file list
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <span>
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

// Mean, sample standard deviation (n - 1; NaN for fewer than 2 values), min and max over the
// finite values (a 0/0 ratio at step 0 is NaN and not a replicate's answer); n = how many.
struct ReplicateStats {
  int n = 0;
  double mean = NAN, std = NAN, min = NAN, max = NAN;
};
ReplicateStats replicate_stats(std::span<const double> values);

// Folder of replicate r of a run inside the study folder.
std::filesystem::path run_folder(const std::filesystem::path& out_dir, int replicates, int r,
                                 const std::string& run);

struct StudyOptions {
  std::filesystem::path out_dir;
  int threads = 1;
  std::string text;                // overrides every run's text and corpus ("" keeps the config's)
  std::string corpus;              // overrides every run's corpus ("" keeps the config's)
  std::vector<int> capture_steps;  // RunOptions::capture_steps, for every run
  std::string command_line;
  std::function<void(const std::string& run, const StepLog&)> progress;
};

struct StudyResult {
  std::vector<std::string> files;  // written, relative to out_dir
  int compared_rows = 0;           // (step, pair, tensor) rows with a distance
};

// The corpus a run trains on under the options' overrides.
Corpus load_run_corpus(const TrainConfig& cfg, const StudyOptions& options);

// Trains a single run into out_dir (loss.csv, snapshots, run.json, in_model.md with shadows).
RunResult run_single(const TrainConfig& cfg, const Corpus& corpus, const StudyOptions& options,
                     const std::filesystem::path& out_dir);

// Trains every run, then writes the comparison files. Throws on I/O or training failure.
StudyResult run_study(const StudyConfig& study, const StudyOptions& options);

}  // namespace attndev::train
