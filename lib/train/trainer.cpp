#include "train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>

#include "config/policy_json.hpp"
#include "io/safetensors.hpp"
#include "numerics/round.hpp"
#include "train/optimizer.hpp"

namespace attndev::train {

Numerics numerics_of(const TrainConfig& cfg, int threads) {
  Numerics n;
  n.precision = cfg.precision;
  n.algorithm = cfg.algorithm;
  n.policy = cfg.policy;
  n.block_r = cfg.block_r;
  n.block_c = cfg.block_c;
  n.threads = threads;
  return n;
}

numerics::Format master_format(Precision p) {
  return activation_format(p);
}

std::vector<io::NamedTensor> weights_of(Model& model, io::DType dtype) {
  std::vector<io::NamedTensor> r;
  for (const Param* p : model.params()) {
    io::NamedTensor t;
    t.name = p->name;
    t.dtype = dtype;
    t.shape = {p->value.rows(), p->value.cols()};
    t.values.assign(p->value.data(), p->value.data() + p->value.size());
    r.push_back(std::move(t));
  }
  return r;
}

std::string snapshot_name(int step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "step_%06d.safetensors", step);
  return buf;
}

namespace {

bool all_finite(const std::vector<Param*>& params) {
  for (const Param* p : params)
    if (!p->grad.allFinite()) return false;
  return true;
}

io::TensorMetadata metadata_of(const TrainConfig& cfg, int step) {
  return {{"run", cfg.name},
          {"step", std::to_string(step)},
          {"seed", std::to_string(cfg.seed)},
          {"data_seed", std::to_string(cfg.data_seed)},
          {"precision", precision_name(cfg.precision)},
          {"algorithm", attention::algorithm_name(cfg.algorithm)},
          {"policy", config::policy_label(cfg.policy)}};
}

void check_captures(const TrainConfig& cfg, const RunOptions& options, bool write) {
  for (int s : options.capture_steps)
    if (s < 0 || s >= cfg.steps)
      throw std::invalid_argument("run " + cfg.name + ": capture step " + std::to_string(s) +
                                  " is outside [0, " + std::to_string(cfg.steps) + ")");
  if (!options.capture_steps.empty() && !write)
    throw std::invalid_argument("captures need an output folder");
}

// Dynamic loss scaling (fp16 only): fp16 gradients below 2^-24 flush to zero, so the loss is
// multiplied up; an overflow (inf/NaN gradient) skips the step and halves the scale.
struct LossScale {
  bool scaling = false;
  double scale = 1.0;
  int good_steps = 0;
};

// After backward: the update (gradients unscaled, held as the fp32 master gradient) or, for a
// non-finite gradient under loss scaling, the skipped step; without scaling that is an error.
void apply_update(const TrainConfig& cfg, const std::vector<Param*>& params,
                  numerics::Format master, AdamW& opt, int step, LossScale& ls, StepLog& log,
                  RunResult& result) {
  if (!all_finite(params)) {
    if (!ls.scaling)
      throw std::runtime_error("run " + cfg.name + ": non-finite gradient at step " +
                               std::to_string(step) + " (loss " + std::to_string(log.loss) +
                               "); lower optimizer.lr or use fp32");
    log.skipped = true;
    ++result.skipped_steps;
    ls.scale = std::max(1.0, ls.scale / 2);
    ls.good_steps = 0;
    return;
  }
  for (Param* p : params) {
    if (ls.scale != 1.0) p->grad /= ls.scale;
    round_all(master, p->grad);
  }
  log.grad_norm = opt.step(step, master);
  if (ls.scaling && ++ls.good_steps >= cfg.loss_scale_growth_interval) {
    ls.scale *= 2;
    ls.good_steps = 0;
  }
}

// What a run writes: loss.csv, the weight snapshots, in_model.csv with shadows (nothing without
// an output folder); the snapshot steps go into the result either way.
struct RunFiles {
  bool write = false;
  std::ofstream csv;
  std::optional<InModelLog> in_model_log;

  explicit RunFiles(const RunOptions& options) : write(!options.out_dir.empty()) {
    if (!write) return;
    std::filesystem::create_directories(options.out_dir / "snapshots");
    csv.open(options.out_dir / "loss.csv");
    if (!csv) throw std::runtime_error("cannot write " + (options.out_dir / "loss.csv").string());
    csv << "step,loss,lr,loss_scale,grad_norm,skipped,seconds\n";
  }
  void open_in_model(const TrainConfig& cfg, const RunOptions& options) {
    if (write && !cfg.shadows.empty())
      in_model_log.emplace(options.out_dir / "in_model.csv", cfg.name, cfg.replicate);
  }
  void snapshot(const TrainConfig& cfg, const RunOptions& options, Model& model, io::DType dtype,
                int step, RunResult& result) const {
    result.snapshot_steps.push_back(step);
    if (write)
      io::write_safetensors(options.out_dir / "snapshots" / snapshot_name(step),
                            weights_of(model, dtype), metadata_of(cfg, step));
  }
  void loss_line(const StepLog& log) {
    if (!write) return;
    char line[256];
    std::snprintf(line, sizeof line, "%d,%.9g,%.6g,%.6g,%.9g,%d,%.3f\n", log.step, log.loss, log.lr,
                  log.loss_scale, log.grad_norm, log.skipped ? 1 : 0, log.seconds);
    csv << line << std::flush;
  }
};

// The forward pass's tap at one step: captures and shadows, only on the steps that asked for
// them (every other step runs exactly the code it runs without shadows). It reads the layer's
// tensors and writes only its own.
AttentionTap step_tap(const TrainConfig& cfg, const RunOptions& options, int step, bool capture_now,
                      bool shadow_now, RunFiles& files, RunResult& result) {
  return
      [&cfg, &options, step, capture_now, shadow_now, &files, &result](const AttentionCall& call) {
        const auto start = std::chrono::steady_clock::now();
        if (capture_now)
          write_capture(capture_path(options.out_dir, step, call.layer), step, call, cfg);
        if (shadow_now) {
          const std::vector<InModelRow> rows = in_model_rows(step, call, cfg);
          if (files.in_model_log) files.in_model_log->write(rows);
          for (const InModelRow& r : rows)
            if (r.head < 0) result.in_model.push_back(r);
        }
        result.shadow_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      };
}

}  // namespace

RunResult train_run(const TrainConfig& cfg, const Corpus& corpus, const RunOptions& options) {
  if (corpus.tokens.size() < std::size_t(cfg.model.context) + 2)
    throw CorpusError("corpus " + corpus.source + " is shorter than the context + 2 characters");
  const auto t0 = std::chrono::steady_clock::now();
  const Numerics num = numerics_of(cfg, options.threads);
  const numerics::Format master = master_format(cfg.precision);
  const io::DType dtype = cfg.precision == Precision::fp64 ? io::DType::f64 : io::DType::f32;

  Model model(cfg.model);
  model.init(cfg.seed, master);
  const std::vector<Param*> params = model.params();
  AdamW opt(cfg.optimizer, params, cfg.steps);
  LossScale ls;
  ls.scaling = cfg.precision == Precision::fp16;
  ls.scale = ls.scaling ? cfg.loss_scale_init : 1.0;

  RunResult result;
  RunFiles files(options);
  check_captures(cfg, options, files.write);
  const std::set<int> shadow_steps(cfg.shadow_steps.begin(), cfg.shadow_steps.end());
  const std::set<int> capture_steps(options.capture_steps.begin(), options.capture_steps.end());
  files.open_in_model(cfg, options);
  files.snapshot(cfg, options, model, dtype, 0, result);

  for (int step = 0; step < cfg.steps; ++step) {
    const Batch batch = make_batch(corpus, cfg.data_seed, step, cfg.batch, cfg.model.context);
    model.zero_grad();
    StepLog log;
    log.step = step;
    const bool shadow_now = !cfg.shadows.empty() && shadow_steps.count(step);
    const bool capture_now = capture_steps.count(step) > 0;
    const AttentionTap tap = step_tap(cfg, options, step, capture_now, shadow_now, files, result);
    log.loss = model.forward(batch.inputs, batch.targets, cfg.model.context, num,
                             shadow_now || capture_now ? &tap : nullptr);
    log.lr = opt.lr_at(step);
    log.loss_scale = ls.scale;
    model.backward(ls.scale, num);
    apply_update(cfg, params, master, opt, step, ls, log, result);
    log.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    files.loss_line(log);
    result.log.push_back(log);
    if (options.progress) options.progress(log);
    if ((step + 1) % cfg.snapshot_every == 0 || step + 1 == cfg.steps)
      files.snapshot(cfg, options, model, dtype, step + 1, result);
  }
  result.final_weights = weights_of(model, dtype);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.failure = training_failure(cfg, result);
  return result;
}

std::string training_failure(const TrainConfig& cfg, const RunResult& r) {
  if (r.log.empty()) return "";
  const auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", x);
    return std::string(text);
  };
  const std::string hint = "; lower optimizer.lr (now " + number(cfg.optimizer.lr) +
                           ") or train in a wider precision (now " + precision_name(cfg.precision) +
                           ")";
  // fp16 loss scaling skips a step whose gradients overflow: a run that skipped them all never
  // updated its weights, and its snapshots would compare the initial weights with themselves.
  if (r.skipped_steps == static_cast<int>(r.log.size()))
    return "every one of the " + std::to_string(r.log.size()) +
           " steps was skipped (non-finite fp16 gradients down to loss scale " +
           number(r.log.back().loss_scale) + "; loss at step 0: " + number(r.log.front().loss) +
           "): nothing was trained" + hint;
  const StepLog& last = r.log.back();
  if (!std::isfinite(last.loss)) {
    int first_bad = last.step;
    for (auto it = r.log.rbegin(); it != r.log.rend() && !std::isfinite(it->loss); ++it)
      first_bad = it->step;
    return "the loss is " + number(last.loss) + " at the last step (" + std::to_string(last.step) +
           "), non-finite since step " + std::to_string(first_bad) + " (" +
           std::to_string(r.skipped_steps) + " of " + std::to_string(r.log.size()) +
           " steps skipped): the weights diverged" + hint;
  }
  return "";
}

}  // namespace attndev::train
