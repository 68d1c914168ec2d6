// One training run: data, model, AdamW, (for fp16) dynamic loss scaling, snapshots, loss curve.
//
// Output folder of a run:
//   loss.csv                       step,loss,lr,loss_scale,grad_norm,skipped,seconds (one row per
//                                  step, flushed as it goes)
//   snapshots/step_NNNNNN.safetensors  every parameter after NNNNNN updates (step 0 = the init),
//                                  F32 (F64 for fp64 training), written atomically
//   run.json                       the resolved config and provenance, written at the end
//   in_model.csv                   with "shadow" variants: deviation inside the model at the
//                                  shadow steps (in_model.hpp), flushed per attention call
//   captures/step_NNNNNN/layer_L.safetensors  Q, K, V at the capture steps (in_model.hpp)
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/tensor_file.hpp"
#include "train/corpus.hpp"
#include "train/in_model.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"
#include "train/train_config.hpp"

namespace attndev::train {

struct StepLog {
  int step = 0;     // 0-based index of the update
  double loss = 0;  // mean cross entropy of the step's batch, before the update
  double lr = 0;
  double loss_scale = 1;
  double grad_norm = 0;  // global L2 norm of the unscaled gradients
  bool skipped = false;  // fp16: non-finite gradients, update skipped, scale halved
  double seconds = 0;    // since the start of the run
};

struct RunOptions {
  std::filesystem::path out_dir;                 // empty: write nothing (tests)
  int threads = 1;                               // attention threads; results do not depend on it
  std::function<void(const StepLog&)> progress;  // called every step
  std::vector<int> capture_steps;                // write Q, K, V of every layer at these steps
                                                 // (needs out_dir; each in [0, steps))
};

struct RunResult {
  std::vector<StepLog> log;
  std::vector<int> snapshot_steps;
  std::vector<io::NamedTensor> final_weights;  // in Model::params() order
  std::vector<InModelRow> in_model;            // the "all"-heads rows of every shadow step
  double shadow_seconds = 0;                   // time spent in shadows and captures
  int skipped_steps = 0;
  double seconds = 0;
  // Empty for a run that trained; else why its weights are no result (every step skipped, or a
  // non-finite loss at the end). train_run returns such a run (its files are the diagnosis);
  // run_single records it in run.json and throws TrainingFailed.
  std::string failure;
};

// A run that finished without training anything usable (RunResult::failure).
class TrainingFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// RunResult::failure of a finished run: "" when it trained.
std::string training_failure(const TrainConfig& cfg, const RunResult& r);

Numerics numerics_of(const TrainConfig& cfg, int threads);
numerics::Format master_format(Precision p);

// Every parameter as a named tensor (values exact in double).
std::vector<io::NamedTensor> weights_of(Model& model, io::DType dtype);

// Throws CorpusError / std::invalid_argument for unusable input before writing anything.
RunResult train_run(const TrainConfig& cfg, const Corpus& corpus, const RunOptions& options);

std::string snapshot_name(int step);  // "step_000050.safetensors"

}  // namespace attndev::train
