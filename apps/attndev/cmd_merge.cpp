// `attndev merge DIR`: combine the shard files of DIR, drop duplicates, report missing points and
// the `sbatch --array=` list that reruns them. Exit 0 when complete, 1 when points are missing.

#include <cstdio>
#include <memory>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/results/merge.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment_cli.hpp"

namespace attndev::app {

void add_merge_command(cli::Command& app) {
  auto dir = std::make_shared<std::string>();
  cli::Command* cmd =
      app.add_subcommand("merge", "Combine shard results in a folder; report missing points");
  cmd->add_option("dir", *dir, "Results folder holding results.shard-<i>-of-<N>.jsonl files")
      ->required();
  cmd->callback([dir] {
    experiment::MergeReport r;
    try {
      r = experiment::merge_results(*dir, io::collect_provenance());
    } catch (const experiment::OutputDirError& e) {
      throw UsageError(e.what());
    }
    for (const std::string& problem : r.malformed_rows)
      std::fprintf(stderr, "attndev merge: warning: %s/%s: row dropped, its point is missing\n",
                   dir->c_str(), problem.c_str());
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
