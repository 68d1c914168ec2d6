// Deviation inside the training model (Golden et al. 2024, Sec. III: the model computes both
// attention implementations on every call, so both see identical inputs), and captures of the
// Q, K, V that attention saw.
//
// At each shadow step, every attention call of the forward pass is measured: the driving variant
// (the one whose output trains the model) and each shadow variant, against the FP64 golden, and
// each shadow against the driver directly. Like `attndev point`, a variant's inputs are the raw
// Q, K, V rounded to that variant's input format, and its golden is `baseline` in fp64 on exactly
// those rounded inputs. The driver's output is the one training used (not a recomputation);
// shadows write only into their own buffers, so training is bit-for-bit the same with or without
// them (test/train/test_in_model.cpp).
//
// in_model.csv (one row per step, layer, head and variant; head "all" = every element of the
// layer's O, which is what `attndev point --inputs` on a capture of that layer measures):
//   run,replicate,step,layer,head,variant,role,algorithm,policy,block_r,block_c,count,
//   max_abs,mean_abs,rmse,rel_l2,nonfinite,vs_driver_max_abs,vs_driver_mean_abs,vs_driver_rmse,
//   status
// Numbers are written in the shortest form that reads back to the same double.
//
// Captures: captures/step_NNNNNN/layer_L.safetensors, tensors q, k, v of shape (B, H, N, d), the
// raw values (exact in the training precision; F32, F64 for fp64 training), metadata (all
// strings): format "attndev-qkv-1", run, replicate, step, layer, seed, data_seed, precision,
// algorithm, policy (label), policy_stages (JSON), block_r, block_c, causal ("true"), scale
// (%.17g), scale_placement ("scores"), source.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "metrics/deviation.hpp"
#include "train/attention_layer.hpp"
#include "train/train_config.hpp"

namespace attndev::train {

struct InModelRow {
  int step = 0;
  int layer = 0;
  int head = -1;        // -1: every head ("all")
  std::string variant;  // driver_name(cfg) or the shadow's name
  bool driver = false;
  attention::Algorithm algorithm = attention::Algorithm::baseline;
  numerics::PrecisionPolicy policy;
  int block_r = 0, block_c = 0;
  metrics::Deviation vs_golden;  // the variant against the fp64 golden on its own inputs
  metrics::Deviation vs_driver;  // against the driver's output (zero for the driver itself)
  // "ok", or "skipped: <why>" where measure::unmeasurable refused the inputs or the golden (the
  // deviations are then NaN: nothing was compared).
  std::string status = "ok";
};

// Q, K, V rounded to the policy's input format, as the kernel would read them (the layer's own
// input stage; attention::run's input stage is then a no-op). Unlike a sweep's inputs
// (measure::round_inputs, where fp8 always saturates), fp8 here overflows as the policy says:
// the training layer rounds its activations with the policy, and a shadow must read what the
// driver read.
attention::Inputs rounded_inputs(const attention::Inputs& raw,
                                 const numerics::PrecisionPolicy& policy);

// Rows for one attention call: per variant (driver first, then shadows in config order) the
// "all" row then one row per head.
std::vector<InModelRow> in_model_rows(int step, const AttentionCall& call, const TrainConfig& cfg);

// in_model.csv, written as the run goes (flushed after every call).
class InModelLog {
 public:
  InModelLog(const std::filesystem::path& path, std::string run, int replicate);
  void write(const std::vector<InModelRow>& rows);

 private:
  std::ofstream out_;
  std::string run_;
  int replicate_;
};
std::vector<std::string> in_model_columns();

// captures/step_NNNNNN/layer_L.safetensors under a run's folder.
std::filesystem::path capture_path(const std::filesystem::path& run_dir, int step, int layer);
// Writes the call's raw Q, K, V (atomically) with the metadata above.
void write_capture(const std::filesystem::path& path, int step, const AttentionCall& call,
                   const TrainConfig& cfg);

// A markdown table of the "all" rows: per step, layer and variant, the deviation from the golden
// and its ratio to the driver's (mean |O - golden|), and the shadow-vs-driver mean.
std::string in_model_markdown(const std::vector<InModelRow>& rows);

}  // namespace attndev::train
