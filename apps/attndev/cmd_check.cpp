// `attndev check CONFIG --max-ratio R [--metric M] [-o DIR] [-a AXIS=VALUES]... [-j N] [--force]`
//
// A gate for CI: runs the config as `attndev run` does (the same folder: a rerun resumes, another
// config's folder is refused without --force), then holds every variant that has a `ratio_to`
// reference to ratio_<metric> <= R at every point (the variant's deviation from the FP64 golden
// over its reference's at the same point: flash-attention's tests hold a kernel to 2x a
// same-precision baseline the same way). One line per checked variant: the worst ratio and where.
// Exit codes: 0 every ratio within R; 1 a ratio above R or not finite, or a row failed; 2 bad
// input (flags, config, a config without ratio_to); 3 nothing compared; 75 interrupted.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "config/suggest.hpp"
#include "exit_codes.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/run/progress.hpp"
#include "experiment/runner.hpp"
#include "experiment/spec/memory.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment_cli.hpp"
#include "io/json_values.hpp"
#include "io/log.hpp"
#include "io/memory.hpp"
#include "io/provenance.hpp"
#include "stop_signals.hpp"

namespace attndev::app {

namespace {

struct CheckArgs {
  std::string config;
  std::string out;
  std::vector<std::string> overrides;
  double max_ratio = 0;
  std::string metric = "max_abs";
  int threads = 0;
  bool force = false;
};

// One variant with a reference: its ratios over the points of the run.
struct VariantCheck {
  std::string variant, reference;
  std::size_t points = 0;    // rows with a ratio
  std::size_t exceeded = 0;  // of which above the limit or not finite
  double worst = -std::numeric_limits<double>::infinity();
  std::string worst_at;  // the point of the worst ratio
  bool holds(double limit) const { return exceeded == 0 && points > 0 && worst <= limit; }
};

std::string point_text(const io::Json& row) {
  auto field = [&](const char* key) { return io::cell_text(row.value(key, io::Json())); };
  std::string s = "seq_len=" + field("seq_len") + " d=" + field("head_dim") +
                  " Br=" + field("block_r") + " Bc=" + field("block_c");
  if (row.value("causal", false)) s += " causal";
  return s + " trial " + field("trial");
}

void check_args(const CheckArgs& a) {
  if (!(a.max_ratio > 0) || !std::isfinite(a.max_ratio))
    throw UsageError("--max-ratio: expected a finite number > 0, got " +
                     io::format_number(a.max_ratio));
  if (std::find(std::begin(experiment::kRatioMetrics), std::end(experiment::kRatioMetrics),
                a.metric) == std::end(experiment::kRatioMetrics))
    throw UsageError("--metric: \"" + a.metric + "\" has no ratio" +
                     config::did_you_mean(a.metric, experiment::kRatioMetrics) +
                     "; valid: " + config::join_names(experiment::kRatioMetrics));
  if (a.threads < 0)
    throw UsageError("-j/--threads must be >= 0, got " + std::to_string(a.threads));
}

std::vector<VariantCheck> collect(const experiment::Config& config,
                                  const std::vector<io::Json>& rows, const CheckArgs& a) {
  std::vector<VariantCheck> checks;
  for (std::size_t v = 0; v < config.variants.size(); ++v) {
    const int ref = config.ratio_reference(v);
    if (ref < 0) continue;
    VariantCheck c;
    c.variant = config.variants[v].name;
    c.reference = config.variants[static_cast<std::size_t>(ref)].name;
    checks.push_back(c);
  }
  const std::string key = "ratio_" + a.metric;
  for (const io::Json& row : rows) {
    const std::string name = row.value("variant", "");
    auto it = std::find_if(checks.begin(), checks.end(),
                           [&](const VariantCheck& c) { return c.variant == name; });
    double ratio = 0;
    if (it == checks.end() || !row.contains(key) || !io::json_to_double(row[key], ratio)) continue;
    ++it->points;
    const bool over = !(ratio <= a.max_ratio);  // NaN and inf are over
    it->exceeded += over;
    // The worst is the largest ratio, or the first that is not a number (which no limit holds).
    if (it->worst_at.empty() || (!std::isnan(it->worst) && !(ratio <= it->worst))) {
      it->worst = ratio;
      it->worst_at = point_text(row);
    }
  }
  return checks;
}

void print_checks(const std::vector<VariantCheck>& checks, const CheckArgs& a) {
  std::printf("check: ratio_%s <= %s at every point (variant / its ratio_to reference)\n\n",
              a.metric.c_str(), io::format_number(a.max_ratio).c_str());
  std::printf("%-24s %-24s %6s %9s  %-8s %s\n", "variant", "reference", "points", "worst",
              "verdict", "worst at");
  for (const VariantCheck& c : checks) {
    const char* verdict = c.points == 0 ? "no rows" : (c.holds(a.max_ratio) ? "ok" : "EXCEEDS");
    char worst[32] = "-";
    if (c.points) std::snprintf(worst, sizeof worst, "%.3g", c.worst);
    std::printf("%-24s %-24s %6zu %9s  %-8s %s\n", c.variant.c_str(), c.reference.c_str(), c.points,
                worst, verdict, c.worst_at.c_str());
  }
}

experiment::RunReport run_config(const CheckArgs& a, const LoadedConfig& loaded,
                                 const experiment::Plan& plan) {
  experiment::RunOptions options;
  options.dir = a.out.empty() ? std::filesystem::path("results") / loaded.config.name
                              : std::filesystem::path(a.out);
  options.threads = a.threads;
  options.force_new = a.force;
  options.provenance = io::collect_provenance();
  options.config_text = loaded.text;
  options.stop_requested = [] { return g_stop_signal != 0; };
  experiment::ProgressReporter progress(::isatty(STDERR_FILENO) != 0, 30);
  options.on_progress = [&progress](std::size_t done, std::size_t total) {
    progress.update(done, total);
  };
  experiment::RunReport report;
  {
    StopSignals signals;
    try {
      report = experiment::run_experiment(loaded.config, plan, options);
    } catch (const experiment::OutputDirError& e) {
      throw UsageError(e.what());
    } catch (const experiment::ConfigError& e) {
      throw UsageError(a.config + ": " + e.what());
    }
  }
  progress.finish();
  log::info("{} points ({} resumed, {} run now); results in {}", report.shard_points,
            report.already_done, report.ran, options.dir.string());
  if (report.interrupted) {
    log::warn("interrupted by {}: rerun the same command to resume",
              signal_name(static_cast<int>(g_stop_signal)));
    throw CommandExit{kExitInterrupted};
  }
  return report;
}

void run_check(const CheckArgs& a) {
  check_args(a);
  const LoadedConfig loaded = load_config_or_usage(a.config, a.overrides);
  const experiment::Config& config = loaded.config;
  bool any_reference = false;
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    any_reference = any_reference || config.ratio_reference(v) >= 0;
  if (!any_reference)
    throw UsageError(a.config +
                     ": no variant has a \"ratio_to\" reference, so there is no ratio to check; "
                     "add \"ratio_to\": \"<reference variant>\" to the variants to hold");
  experiment::Plan plan;
  try {
    plan = experiment::make_plan(config);
  } catch (const experiment::ConfigError& e) {
    throw UsageError(a.config + ": " + e.what());
  }
  // Before the folder is touched, as run does: the largest point, and the rows held at once
  // when the table is read back.
  const experiment::PlanPeak peak = experiment::plan_peak_bytes(config, plan, a.threads, 0, 1);
  if (peak.point)
    io::require_memory(peak.bytes, "the largest point (" + peak.point->describe() + ")");
  io::require_memory(
      io::sat_add(peak.bytes, experiment::rows_bytes(config, plan.points.size())),
      "the largest point with the " + std::to_string(plan.points.size()) + " points' result rows");
  const experiment::RunReport report = run_config(a, loaded, plan);
  const std::filesystem::path dir =
      a.out.empty() ? std::filesystem::path("results") / config.name : std::filesystem::path(a.out);
  const experiment::StoredResults stored = experiment::load_results(dir, config, plan);
  const std::vector<VariantCheck> checks = collect(config, stored.rows, a);
  print_checks(checks, a);
  std::size_t failing = 0;
  for (const VariantCheck& c : checks) failing += c.points > 0 && !c.holds(a.max_ratio);
  std::printf("\n%zu of %zu variants within %s; rows: %zu ok, %zu failed, %zu skipped (%s)\n",
              checks.size() - failing, checks.size(), io::format_number(a.max_ratio).c_str(),
              report.rows_ok, report.rows_failed, report.rows_skipped, dir.string().c_str());
  if (failing > 0 || report.rows_failed > 0) throw CommandExit{kExitFailure};
  if (report.rows_ok == 0) {
    log::error("nothing was compared: every variant was skipped");
    throw CommandExit{kExitNothingCompared};
  }
}

}  // namespace

void add_check_command(cli::Command& app) {
  auto args = std::make_shared<CheckArgs>();
  cli::Command* cmd = app.add_subcommand(
      "check",
      "Run a config and fail (exit 1) when a variant's ratio to its ratio_to reference exceeds "
      "--max-ratio at some point: a deviation gate for CI");
  cmd->add_option("config", args->config, "Experiment config (JSON) with ratio_to references")
      ->required();
  cmd->add_option("--max-ratio", args->max_ratio,
                  "Largest ratio_<metric> allowed (variant / reference at the same point), > 0")
      ->required();
  cmd->add_option("--metric", args->metric,
                  "Which ratio: max_abs (default), mean_abs, std_abs, rmse, rel_l2, max_rel");
  cmd->add_option("-o,--out", args->out, "Output folder (default: results/<config name>)")
      ->non_empty();
  cmd->add_option("-a,--axis", args->overrides,
                  "Override an axis: -a seq_len=[512,1024] (repeatable)");
  cmd->add_flag("--force", args->force,
                "Delete results of a different config in the output folder");
  cmd->add_option("-j,--threads", args->threads,
                  "Threads per attention call (0: all hardware threads)");
  cmd->callback([args] { run_check(*args); });
}

}  // namespace attndev::app
