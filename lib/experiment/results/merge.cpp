#include "experiment/results/merge.hpp"

#include <algorithm>
#include <set>

#include "experiment/results/result_tables.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/spec/memory.hpp"
#include "io/memory.hpp"
#include "io/atomic_file.hpp"
#include "io/jsonl.hpp"
#include "io/safe_open.hpp"

namespace attndev::experiment {

std::string array_ranges(const std::vector<std::size_t>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(v[j]);
    }
    i = j + 1;
  }
  return out;
}

MergeReport merge_results(const std::filesystem::path& dir, const io::Provenance& writer) {
  // It rewrites results.jsonl: never while a run appends to it or to a shard file.
  const OutputLock lock = lock_folder(dir, "attndev merge");
  const Config config = read_manifest_config(dir);
  const Plan plan = make_plan(config);
  io::require_memory(rows_bytes(config, plan.points.size()),
                     "merging the " + std::to_string(plan.points.size() * config.variants.size()) +
                         " result rows of " + dir.string());
  const StoredResults stored = load_results(dir, config, plan);
  MergeReport report;
  report.points_total = plan.points.size();
  report.points_present = stored.done_points.size();
  report.duplicate_rows = stored.duplicate_rows;
  report.incomplete_points = stored.incomplete_points;
  report.torn_lines = stored.torn_lines;
  report.malformed_rows = stored.malformed_rows;
  report.files = stored.files;
  // Several shard counts can coexist (a rerun with another N); the largest is what the job array
  // most likely used last.
  for (const std::string& name : stored.files) {
    std::size_t i = 0, n = 0;
    if (parse_shard_file_name(name, i, n)) report.shard_count = std::max(report.shard_count, n);
  }
  std::set<std::size_t> shards;
  for (const Point& p : plan.points) {
    if (stored.done_points.count(p.id)) continue;
    report.missing_ids.push_back(p.id);
    if (report.shard_count) shards.insert(shard_of(p, report.shard_count));
  }
  report.missing_shards.assign(shards.begin(), shards.end());

  // Before results.jsonl is rewritten: tables holding more rows than the sources keep them.
  check_tables_not_shrinking(dir, stored.rows.size());
  std::string text;
  for (const io::Json& r : stored.runs) text += io::jsonl_line(r) + "\n";
  for (const io::Json& r : stored.rows) text += io::jsonl_line(r) + "\n";
  io::write_regular_file_atomic(dir / "results.jsonl", text);
  write_result_tables(dir, config, plan, stored, writer);
  return report;
}

}  // namespace attndev::experiment
