// `attndev merge DIR`: combine the shard files of DIR, drop duplicates, report missing points and
// the `sbatch --array=` list that reruns them. Exit 0 when complete, 1 when points are missing.

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/results/merge.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment_cli.hpp"

namespace attndev::app {

namespace {

void print_merge_json(const experiment::MergeReport& r) {
  const nlohmann::json out = {{"files", r.files},
                              {"points_total", r.points_total},
                              {"points_present", r.points_present},
                              {"duplicate_rows", r.duplicate_rows},
                              {"incomplete_points", r.incomplete_points},
                              {"torn_lines", r.torn_lines},
                              {"complete", r.missing_ids.empty()},
                              {"missing_ids", r.missing_ids},
                              {"shard_count", r.shard_count},
                              {"missing_shards", r.missing_shards},
                              {"rerun_array", experiment::array_ranges(r.missing_shards)}};
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_merge_command(cli::Command& app) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cli::Command* cmd =
      app.add_subcommand("merge", "Combine shard results in a folder; report missing points");
  cmd->add_option("dir", *dir, "Results folder holding results.shard-<i>-of-<N>.jsonl files")
      ->required();
  cmd->add_flag("--json", *json, "Print one JSON object (counts, missing points) instead of text");
  cmd->callback([dir, json] {
    experiment::MergeReport r;
    try {
      r = experiment::merge_results(*dir, io::collect_provenance());
    } catch (const experiment::OutputDirError& e) {
      throw UsageError(e.what());
    }
    for (const std::string& problem : r.malformed_rows)
      std::fprintf(stderr, "attndev merge: warning: %s/%s: row dropped, its point is missing\n",
                   dir->c_str(), problem.c_str());
    for (const std::string& conflict : r.conflicting_rows)
      std::fprintf(stderr, "attndev merge: warning: %s/%s: contradictory row dropped\n",
                   dir->c_str(), conflict.c_str());
    if (*json) {
      print_merge_json(r);
      if (!r.missing_ids.empty()) throw CommandExit{kExitFailure};
      return;
    }
    std::printf("merged %zu file(s): %zu of %zu points present, %zu duplicate rows removed",
                r.files.size(), r.points_present, r.points_total, r.duplicate_rows);
    if (r.incomplete_points) std::printf(", %zu incomplete points dropped", r.incomplete_points);
    if (r.torn_lines) std::printf(", %zu torn lines ignored", r.torn_lines);
    std::printf("\nwrote %s/results.jsonl, results.csv, results.json, summary.md\n", dir->c_str());
    if (r.missing_ids.empty()) {
      std::printf("complete\n");
      return;
    }
    std::printf("missing %zu point(s):", r.missing_ids.size());
    for (std::size_t i = 0; i < r.missing_ids.size() && i < 20; ++i)
      std::printf(" %s", r.missing_ids[i].c_str());
    std::printf("%s\n", r.missing_ids.size() > 20 ? " ..." : "");
    if (r.shard_count) {
      std::printf(
          "rerun them with: sbatch --array=%s ... attndev run CONFIG -o %s --shard auto/%zu\n",
          experiment::array_ranges(r.missing_shards).c_str(), dir->c_str(), r.shard_count);
    } else {
      std::printf("rerun them with the same `attndev run CONFIG -o %s` command (it resumes)\n",
                  dir->c_str());
    }
    throw CommandExit{kExitFailure};
  });
}

}  // namespace attndev::app
