// `attndev merge`: combine the shard files of a folder into one result set.
//
// Rows are matched to the plan by point id and deduplicated by (point, variant), so merging is
// idempotent and order-independent; the merged rows are in plan order, which makes a merged
// result equal to a single-process run point for point.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "experiment/spec/plan.hpp"
#include "io/provenance.hpp"

namespace attndev::experiment {

struct MergeReport {
  std::size_t points_total = 0;
  std::size_t points_present = 0;
  std::size_t duplicate_rows = 0;
  std::size_t incomplete_points = 0;
  std::size_t torn_lines = 0;
  std::vector<std::string> malformed_rows;    // StoredResults::malformed_rows (points rerun)
  std::vector<std::string> conflicting_rows;  // StoredResults::conflicting_rows (first kept)
  std::vector<std::string> files;
  std::vector<std::string> missing_ids;     // plan order
  std::size_t shard_count = 0;              // shard count of the files (0: no shard files)
  std::vector<std::size_t> missing_shards;  // shards holding missing points (under shard_count)
};

// Reads DIR/run.json and every results*.jsonl; writes DIR/results.jsonl (merged), results.csv,
// results.json, summary.md. Throws OutputDirError for a folder that is not a results folder.
MergeReport merge_results(const std::filesystem::path& dir, const io::Provenance& writer);

// "0-3,5,7-8": the form sbatch --array takes.
std::string array_ranges(const std::vector<std::size_t>& sorted_indices);

}  // namespace attndev::experiment
