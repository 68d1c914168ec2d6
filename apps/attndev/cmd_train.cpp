// `attndev train CONFIG [-o DIR] [--quick] [--text FILE | --corpus NAME] [--steps N]
//                      [--capture STEP[,STEP...]] [-j N] [--force]`
//
// CONFIG is a single run (configs/train/*.json) or a study (configs/paper/
// golden2024-fig7-8-weights.json: "base", "runs", "pairs", "ratios", "quick"). Trains on the CPU
// with the emulated attention forward and backward inside; writes loss.csv and safetensors
// snapshots per run and, for a study, the weight comparison (docs/training.md). --capture writes
// the Q, K, V of every attention layer at those steps, readable as `attndev point --inputs`.
// Exit codes: 0 ok; 2 bad config, flags, text file or output folder (nothing written);
// 1 a run failed while training (e.g. non-finite gradients in fp32).
#include "io/log.hpp"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/spec/config.hpp"
#include "io/atomic_file.hpp"
#include "io/memory.hpp"
#include "io/provenance.hpp"
#include "train/memory.hpp"
#include "train/study.hpp"

namespace attndev::app {
namespace {

struct TrainArgs {
  std::string config;
  std::string out;
  std::string text;
  std::string corpus;
  std::vector<int> capture;
  bool quick = false;
  bool force = false;
  int steps = 0;
  int threads = 0;
};

// Output folders are never mixed: an existing non-empty folder needs --force.
void prepare_out_dir(const std::filesystem::path& out, bool force) {
  if (std::filesystem::exists(out) && !std::filesystem::is_directory(out))
    throw UsageError("output path " + out.string() + " exists and is not a folder: pass -o DIR");
  if (std::filesystem::exists(out) && !std::filesystem::is_empty(out) && !force)
    throw UsageError("output folder " + out.string() +
                     " is not empty: pass --force to overwrite its runs, or -o another folder");
  std::filesystem::create_directories(out);
}

void progress_line(const std::string& run, const train::StepLog& l, int every, int total) {
  if ((l.step + 1) % every != 0 && l.step + 1 != total && l.step != 0) return;
  log::info("{} step {}/{} loss {:.4f} lr {:.2e}{}{} ({:.1f} s)", run, l.step + 1, total, l.loss,
            l.lr, l.loss_scale != 1.0 ? fmt::format(" scale {:g}", l.loss_scale) : "",
            l.skipped ? " SKIPPED (overflow)" : "", l.seconds);
}

// The config as given, with --steps applied, parsed as a study or as a single run.
struct LoadedTrain {
  nlohmann::json json;
  bool is_study = false;
  train::StudyConfig study;
  train::TrainConfig single;

  std::vector<train::TrainConfig> runs() const {
    return is_study ? study.runs : std::vector<train::TrainConfig>{single};
  }
  const std::string& name() const { return is_study ? study.name : single.name; }
};

LoadedTrain load_train(const TrainArgs& args) {
  LoadedTrain t;
  try {
    t.json = train::read_json_file(args.config);
    t.is_study = train::is_study(t.json);
    if (args.steps > 0) {
      // --steps overrides every run (the study's base) before validation.
      if (t.is_study)
        t.json["base"]["steps"] = args.steps;
      else
        t.json["steps"] = args.steps;
    }
    if (t.is_study) {
      t.study = train::parse_study_config(t.json, args.quick);
    } else {
      if (args.quick) throw UsageError("--quick applies to a study config (one with \"runs\")");
      t.single = train::parse_train_config(t.json);
    }
  } catch (const experiment::ConfigError& e) {
    throw UsageError(args.config + ": " + e.path() + ": " + e.message());
  }
  return t;
}

// Every capture step checked, memory checked and every corpus loaded before the output folder
// is created: a bad step or a missing text is a usage error that leaves nothing behind.
void check_train_request(const TrainArgs& args, const LoadedTrain& t,
                         const train::StudyOptions& options) {
  if (!args.text.empty() && !args.corpus.empty())
    throw UsageError("--text FILE and --corpus NAME both choose the corpus: give one");
  const std::vector<train::TrainConfig> all_runs = t.runs();
  for (const train::TrainConfig& c : all_runs)
    for (int s : args.capture)
      if (s < 0 || s >= c.steps)
        throw UsageError("--capture " + std::to_string(s) + ": run " + c.name + " has steps 0.." +
                         std::to_string(c.steps - 1) +
                         " (step s is the forward pass of update s, on snapshot step_s)");
  for (const train::TrainConfig& c : all_runs)
    io::require_memory(train::training_memory_bytes(c, options.threads), "training run " + c.name);
  try {
    for (const train::TrainConfig& c : all_runs) train::load_run_corpus(c, options);
  } catch (const train::CorpusError& e) {
    throw UsageError(e.what());
  }
}

void train_study(const train::StudyConfig& study, train::StudyOptions& options,
                 nlohmann::json record) {
  int total = 0;
  for (const auto& c : study.runs) total = std::max(total, c.steps);
  const int every = study.runs.front().log_every;
  options.progress = [&](const std::string& run, const train::StepLog& l) {
    progress_line(run, l, every, total);
  };
  const train::StudyResult r = train::run_study(study, options);
  record["files"] = r.files;
  record["compared_rows"] = r.compared_rows;
  record["provenance"] = provenance_json();
  io::write_file_atomic(options.out_dir / "study.json", record.dump(2) + "\n");
  log::info("study {}: {} comparison rows; see {}", study.name, r.compared_rows,
            (options.out_dir / "summary.md").string());
  if (r.compared_rows == 0 && !study.pairs.empty()) throw CommandExit{kExitNothingCompared};
}

void train_single(const train::TrainConfig& single, train::StudyOptions& options,
                  std::size_t captures) {
  const std::filesystem::path& out = options.out_dir;
  options.progress = [&](const std::string& run, const train::StepLog& l) {
    progress_line(run, l, single.log_every, single.steps);
  };
  const train::Corpus corpus = train::load_run_corpus(single, options);
  const train::RunResult r = train::run_single(single, corpus, options, out);
  log::info("{}: loss {:.4f} -> {:.4f} in {} steps, {:.1f} s; snapshots in {}", single.name,
            r.log.front().loss, r.log.back().loss, single.steps, r.seconds,
            (out / "snapshots").string());
  if (!single.shadows.empty())
    log::info("{}: in-model deviation of {} shadow(s) at {} step(s) in {} ({:.1f} s)", single.name,
              single.shadows.size(), single.shadow_steps.size(), (out / "in_model.csv").string(),
              r.shadow_seconds);
  if (captures != 0)
    log::info("{}: Q, K, V of {} step(s) in {}", single.name, captures,
              (out / "captures").string());
}

void run_train(const TrainArgs& args, const std::string& command_line) {
  const LoadedTrain t = load_train(args);
  train::StudyOptions options;
  options.threads = args.threads > 0
                        ? args.threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.text = args.text;
  options.corpus = args.corpus;
  options.command_line = command_line;
  options.capture_steps = args.capture;
  check_train_request(args, t, options);
  const std::filesystem::path out = args.out.empty()
                                        ? std::filesystem::path("results/train") / t.name()
                                        : std::filesystem::path(args.out);
  prepare_out_dir(out, args.force);
  options.out_dir = out;
  if (t.is_study) {
    const nlohmann::json record = {{"command_line", command_line},
                                   {"config_file", args.config},
                                   {"config", t.json},
                                   {"quick", args.quick},
                                   {"threads", options.threads}};
    train_study(t.study, options, record);
  } else {
    train_single(t.single, options, args.capture.size());
  }
}

}  // namespace

void add_train_command(cli::Command& app) {
  auto args = std::make_shared<TrainArgs>();
  cli::Command* cmd = app.add_subcommand(
      "train", "Train the small transformer on the CPU with emulated attention (a run or a study)");
  cmd->add_option("config", args->config, "Run or study config (JSON)")->required();
  cmd->add_option("-o,--out", args->out, "Output folder (default results/train/<name>)")
      ->non_empty();
  cmd->add_option("--text", args->text, "Train on this text file instead of the config's corpus")
      ->non_empty();
  cmd->add_option("--corpus", args->corpus,
                  "Train on this named corpus: fortunes-min (the default; Debian package "
                  "fortunes-min) or fortunes (the full package, ~2.6 MB)");
  cmd->add_option("--capture", args->capture,
                  "Write the Q, K, V each attention layer saw at these steps (comma-separated; "
                  "step s = the forward pass of update s) to RUN/captures/step_NNNNNN/"
                  "layer_L.safetensors, readable by `attndev point --inputs`")
      ->delimiter(',');
  cmd->add_flag("--quick", args->quick, "Study: merge the config's \"quick\" block (the CI form)");
  cmd->add_option("--steps", args->steps, "Override the number of steps of every run")
      ->check(cli::Range(1, 1000000));
  cmd->add_option("-j,--threads", args->threads,
                  "Attention threads, 0: all hardware threads (results do not depend on it)")
      ->check(cli::Range(0, 1024));
  cmd->add_flag("--force", args->force, "Write into a non-empty output folder");
  cmd->callback([args] {
    std::string line = "attndev train " + args->config;
    if (!args->out.empty()) line += " -o " + args->out;
    if (!args->text.empty()) line += " --text " + args->text;
    if (!args->corpus.empty()) line += " --corpus " + args->corpus;
    if (!args->capture.empty()) {
      line += " --capture ";
      for (std::size_t i = 0; i < args->capture.size(); ++i) {
        if (i) line += ',';
        line += std::to_string(args->capture[i]);
      }
    }
    if (args->quick) line += " --quick";
    if (args->steps > 0) line += " --steps " + std::to_string(args->steps);
    run_train(*args, line);
  });
}

}  // namespace attndev::app
