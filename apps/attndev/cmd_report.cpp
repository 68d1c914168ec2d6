// `attndev report DIR`: rebuild results.csv, results.json and summary.md from the JSONL files
// in DIR without recomputing anything (after editing `metrics`, or on a copied folder).
// `--metric NAME` (repeatable) picks the summary's columns for this report instead of the
// config's `metrics`: presentation only, so it needs no rerun and is not part of the config hash.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/results/result_tables.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/spec/memory.hpp"
#include "io/memory.hpp"
#include "config/suggest.hpp"
#include "experiment_cli.hpp"
#include "io/atomic_file.hpp"

namespace attndev::app {

void add_report_command(cli::Command& app) {
  struct Args {
    std::string dir;
    bool quiet_summary = false;
    std::vector<std::string> metrics;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cli::Command* cmd = app.add_subcommand(
      "report", "Rebuild summary.md, results.csv and results.json from results*.jsonl");
  cmd->add_option("dir", args->dir, "Results folder of `attndev run`")->required();
  cmd->add_flag("--no-summary", args->quiet_summary, "Do not print summary.md");
  cmd->add_option("--metric", args->metrics,
                  "A metric column of the summary tables (repeatable; default: the config's "
                  "`metrics`)");
  cmd->add_flag("--json", args->json, "Print results.json (every row) instead of summary.md");
  cmd->callback([args] {
    const std::filesystem::path dir(args->dir);
    for (const std::string& m : args->metrics) {
      if (std::find(std::begin(experiment::kSelectableMetrics),
                    std::end(experiment::kSelectableMetrics),
                    m) == std::end(experiment::kSelectableMetrics))
        throw UsageError("--metric: unknown metric \"" + m + "\"" +
                         config::did_you_mean(m, experiment::kSelectableMetrics) +
                         "; valid: " + config::join_names(experiment::kSelectableMetrics));
      if (std::count(args->metrics.begin(), args->metrics.end(), m) > 1)
        throw UsageError("--metric: \"" + m + "\" given twice");
    }
    try {
      const experiment::OutputLock lock = experiment::lock_folder(dir, "attndev report");
      experiment::Config config = experiment::read_manifest_config(dir);
      if (!args->metrics.empty()) config.metrics = args->metrics;
      const experiment::Plan plan = experiment::make_plan(config);
      io::require_memory(experiment::rows_bytes(config, plan.points.size()),
                         "reading the " +
                             std::to_string(plan.points.size() * config.variants.size()) +
                             " result rows of " + args->dir);
      const experiment::StoredResults stored = experiment::load_results(dir, config, plan);
      for (const std::string& problem : stored.malformed_rows)
        std::fprintf(stderr,
                     "attndev report: warning: %s/%s: row dropped (rerun the same `attndev run` "
                     "to recompute its point)\n",
                     args->dir.c_str(), problem.c_str());
      experiment::write_result_tables(dir, config, plan, stored, io::collect_provenance());
      if (args->json)
        std::fputs(io::read_file(dir / "results.json").c_str(), stdout);
      else if (!args->quiet_summary)
        std::fputs(
            experiment::summary_markdown(config, plan, stored, io::collect_provenance()).c_str(),
            stdout);
      std::fprintf(stderr, "%s: %zu of %zu points, %zu rows (%zu duplicate rows ignored)\n",
                   args->dir.c_str(), stored.done_points.size(), plan.points.size(),
                   stored.rows.size(), stored.duplicate_rows);
      if (stored.rows.empty()) throw CommandExit{kExitNothingCompared};
    } catch (const experiment::OutputDirError& e) {
      throw UsageError(e.what());
    }
  });
}

}  // namespace attndev::app
