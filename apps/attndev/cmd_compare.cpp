// `attndev compare A B [--metric M]... [--rows K] [--json]`: line up two result folders on matching
// (point, variant) and show how metrics moved (B/A). Exit 3 when no point matches.

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/results/compare.hpp"
#include "experiment/results/result_tables.hpp"
#include "experiment/results/results_store.hpp"

namespace attndev::app {

namespace {

// Ratios as numbers, or "nan"/"inf" (json_number): a metric that moved from 0 is inf, not null.
void print_comparison_json(const experiment::Comparison& c) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const experiment::MetricChange& m : c.metrics)
    metrics.push_back({{"metric", m.metric},
                       {"compared", m.compared},
                       {"identical", m.identical},
                       {"geomean_ratio", json_number(m.geomean_ratio)},
                       {"min_ratio", json_number(m.min_ratio)},
                       {"max_ratio", json_number(m.max_ratio)}});
  const nlohmann::json out = {{"matched", c.matched},
                              {"only_a", c.only_a},
                              {"only_b", c.only_b},
                              {"status_changes", c.status_changes},
                              {"metrics", metrics}};
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_compare_command(cli::Command& app) {
  struct Args {
    std::string a, b;
    std::vector<std::string> metrics;
    std::size_t rows = 50;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cli::Command* cmd =
      app.add_subcommand("compare", "Compare two result folders on matching points");
  cmd->add_option("a", args->a, "Results folder A (the reference)")->required();
  cmd->add_option("b", args->b, "Results folder B")->required();
  cmd->add_option("-m,--metric", args->metrics,
                  "Metric to compare (repeatable; default: A's config metrics)");
  cmd->add_option("--rows", args->rows, "Matched rows listed for the first metric");
  cmd->add_flag("--json", args->json, "Print one JSON object (counts and per-metric changes)");
  cmd->callback([args] {
    experiment::Comparison c;
    try {
      c = experiment::compare_results(args->a, args->b, args->metrics, args->rows);
    } catch (const experiment::OutputDirError& e) {
      throw UsageError(e.what());
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (args->json)
      print_comparison_json(c);
    else
      std::printf(
          "matched %zu (point, variant) rows; %zu only in A, %zu only in B; %zu status "
          "changes\n\n",
          c.matched, c.only_a, c.only_b, c.status_changes);
    if (c.matched == 0) {
      std::fprintf(
          stderr,
          "attndev compare: nothing to compare: no point of A is in B (different configs?)\n");
      throw CommandExit{kExitNothingCompared};
    }
    if (args->json) return;
    Table summary({"metric", "compared", "identical", "geomean B/A", "min B/A", "max B/A"});
    for (const experiment::MetricChange& m : c.metrics)
      summary.add_row({m.metric, std::to_string(m.compared), std::to_string(m.identical),
                       experiment::short_number(m.geomean_ratio),
                       experiment::short_number(m.min_ratio),
                       experiment::short_number(m.max_ratio)});
    summary.print(stdout);
    std::printf("\n%s", c.table.c_str());
    if (c.matched > args->rows) std::printf("... %zu more rows (--rows)\n", c.matched - args->rows);
  });
}

}  // namespace attndev::app
