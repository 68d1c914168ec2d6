// `attndev run CONFIG [-o DIR] [-a AXIS=VALUES]... [--shard i/N|auto] [--force] [-j N]`
//
// Runs this shard's unfinished points (rerunning the same command resumes), streams rows to
// DIR/results*.jsonl and, for an unsharded run, writes results.csv, results.json and summary.md.
// Exit codes (docs/results.md): 0 ok; 1 a variant failed; 2 bad config/flags/folder; 3 nothing
// compared (every variant skipped); 75 interrupted by SIGINT/SIGTERM/SIGHUP (rerun to resume).
#include "io/log.hpp"
#include <unistd.h>

#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/run/device_backend.hpp"
#include "experiment/spec/memory.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/run/progress.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/runner.hpp"
#include "experiment_cli.hpp"
#include "io/atomic_file.hpp"
#include "io/memory.hpp"
#include "stop_signals.hpp"

namespace attndev::app {

namespace {

struct RunArgs {
  std::string config;
  std::string out;
  std::vector<std::string> overrides;
  std::string shard;
  bool force_new = false;
  int threads = 0;
  double log_interval = 30;
  bool no_summary = false;
  bool no_retry = false;
  std::string backend;  // empty: the config's "backend"
};

experiment::RunOptions run_options(const RunArgs& a, const LoadedConfig& loaded,
                                   const ShardSpec& shard) {
  experiment::RunOptions options;
  options.dir = a.out.empty() ? std::filesystem::path("results") / loaded.config.name
                              : std::filesystem::path(a.out);
  options.shard_index = shard.index;
  options.shard_count = shard.count;
  options.threads = a.threads;
  options.force_new = a.force_new;
  options.retry_failed = !a.no_retry;
  options.provenance = io::collect_provenance();
  options.config_text = loaded.text;
  options.stop_requested = [] { return g_stop_signal != 0; };
  return options;
}

// The run's last lines, and its exit status: 0, or failed rows, nothing compared, interrupted.
void finish_run(const RunArgs& a, const experiment::RunReport& report, const ShardSpec& shard,
                const std::filesystem::path& dir) {
  if (report.interrupted) {
    log::warn(
        "interrupted by {}: {} of {} points of this shard are in {}; rerun the same command to "
        "resume",
        signal_name(static_cast<int>(g_stop_signal)), report.already_done + report.ran,
        report.shard_points, report.results_file.string());
    throw CommandExit{kExitInterrupted};
  }
  log::info(
      "{} points ({} resumed, {} run now, {} of them retried); rows: {} ok, {} failed, {} "
      "skipped; results in {}",
      report.shard_points, report.already_done, report.ran, report.retried, report.rows_ok,
      report.rows_failed, report.rows_skipped, dir.string());
  if (report.tables_written && !a.no_summary && log::enabled(log::Level::info))
    std::fputs(io::read_file(dir / "summary.md").c_str(), stdout);
  if (shard.count > 1)
    log::info("sharded run: combine the shards with `attndev merge {}`", dir.string());
  if (report.rows_failed) throw CommandExit{kExitFailure};
  if (report.rows_ok == 0 && report.rows_skipped) {
    log::error("nothing was compared: every variant was skipped");
    throw CommandExit{kExitNothingCompared};
  }
}

// Everything of a run after its config is loaded: plan, warnings, the memory check, the sweep
// under the stop signals, the progress line. `a.config` names the config in messages.
experiment::RunReport execute_run(const RunArgs& a, const LoadedConfig& loaded,
                                  const ShardSpec& shard) {
  experiment::Config config = loaded.config;
  if (!a.backend.empty()) config.backend = parse_run_backend(a.backend);
  if (a.threads < 0)
    throw UsageError("-j/--threads must be >= 0, got " + std::to_string(a.threads));
  experiment::Plan plan;
  try {
    plan = experiment::make_plan(config);
  } catch (const experiment::ConfigError& e) {
    throw UsageError(a.config + ": " + e.what());
  }
  // The same warnings as validate and plan: a sweep that runs for hours should say up front
  // what it will compare across formats.
  print_config_warnings(a.config, experiment::config_warnings(config));
  // The device, its twins and its memory (run-level cuda backend): refused before anything runs.
  try {
    experiment::require_cuda_backend(config, plan, shard.index, shard.count);
  } catch (const experiment::ConfigError& e) {
    throw UsageError(a.config + ": " + e.what());
  }
  // Before the folder is touched: a point that cannot fit fails now, not after hours.
  const experiment::PlanPeak peak =
      experiment::plan_peak_bytes(config, plan, a.threads, shard.index, shard.count);
  if (peak.point)
    io::require_memory(peak.bytes, "the largest point (" + peak.point->describe() + ")");
  // The rows are held at once when the tables are written: 10^6 points x 3 variants is 22 GB.
  const std::vector<std::uint32_t> shards = experiment::assign_shards(plan, shard.count);
  const auto shard_points =
      static_cast<std::size_t>(std::count(shards.begin(), shards.end(), shard.index));
  io::require_memory(io::sat_add(peak.bytes, experiment::rows_bytes(config, shard_points)),
                     "the largest point with the " + std::to_string(shard_points) + " points' " +
                         std::to_string(shard_points * config.variants.size()) + " result rows");
  experiment::RunOptions options = run_options(a, loaded, shard);
  experiment::ProgressReporter progress(::isatty(STDERR_FILENO) != 0, a.log_interval);
  options.on_progress = [&progress](std::size_t done, std::size_t total) {
    progress.update(done, total);
  };
  log::info("{}: {} points x {} variants{}, output {}", config.name, plan.points.size(),
            config.variants.size(),
            shard.count > 1
                ? " (shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + ")"
                : "",
            options.dir.string());
  experiment::RunReport report;
  {
    StopSignals signals;
    try {
      report = experiment::run_experiment(config, plan, options);
    } catch (const experiment::OutputDirError& e) {
      throw UsageError(e.what());
    } catch (const experiment::ConfigError& e) {
      throw UsageError(a.config + ": " + e.what());
    }
  }
  progress.finish();
  return report;
}

void run_run(const RunArgs& a) {
  const LoadedConfig loaded = load_config_or_usage(a.config, a.overrides);
  const ShardSpec shard = parse_shard(a.shard);
  const experiment::RunReport report = execute_run(a, loaded, shard);
  finish_run(a, report, shard,
             a.out.empty() ? std::filesystem::path("results") / loaded.config.name
                           : std::filesystem::path(a.out));
}

}  // namespace

experiment::RunReport run_loaded_config(const LoadedConfig& loaded, const std::string& label,
                                        const std::string& out, int threads, bool force) {
  RunArgs a;
  a.config = label;
  a.out = out;
  a.threads = threads;
  a.force_new = force;
  const experiment::RunReport report = execute_run(a, loaded, ShardSpec{});
  if (report.interrupted) {
    log::warn("interrupted by {}: {} of {} points are in {}; rerun the same command to resume",
              signal_name(static_cast<int>(g_stop_signal)), report.already_done + report.ran,
              report.shard_points, report.results_file.string());
    throw CommandExit{kExitInterrupted};
  }
  return report;
}

void add_run_command(cli::Command& app) {
  auto args = std::make_shared<RunArgs>();
  cli::Command* cmd = app.add_subcommand(
      "run", "Run an experiment config (resumes an interrupted run in the same folder)");
  cmd->add_option("config", args->config, "Experiment config (JSON)")->required();
  cmd->add_option("-o,--out", args->out, "Output folder (default: results/<config name>)")
      ->non_empty();
  cmd->add_option("-a,--axis", args->overrides,
                  "Override an axis: -a seq_len=[512,1024] (repeatable)");
  cmd->add_option(
      "--shard", args->shard,
      "Run only shard i/N of the points; auto: SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT; "
      "auto/N: task id from SLURM, N shards");
  // --force means the same on every command: write over what the output folder holds.
  cmd->add_flag("--force", args->force_new,
                "Delete results of a different config in the output folder");
  cmd->add_flag("--force-new", args->force_new)->hidden();  // the old name of --force
  cmd->add_option("-j,--threads", args->threads,
                  "Threads per attention call (0: all hardware threads)");
  cmd->add_option("--log-interval", args->log_interval,
                  "Seconds between progress lines when stderr is not a terminal");
  cmd->add_flag("--no-summary", args->no_summary, "Do not print summary.md at the end");
  cmd->add_flag("--no-retry", args->no_retry,
                "Keep points with a failed row as they are (default: run them again)");
  cmd->add_option("--backend", args->backend,
                  "Where the run's own work runs: cpu, or cuda (inputs, golden and emulated "
                  "variants on the GPU, bit-identical to cpu; overrides the config's \"backend\")");
  cmd->callback([args] { run_run(*args); });
}

}  // namespace attndev::app
