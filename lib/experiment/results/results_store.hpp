// The output folder: manifest, per-shard JSONL files, and reading them back for resume, report
// and merge.
//
//   DIR/run.json                          manifest: config (effective, canonical) and its hash
//   DIR/results.jsonl                     rows of an unsharded run (and of `attndev merge`)
//   DIR/results.shard-<i>-of-<N>.jsonl    rows of shard i of N
//
// Every JSONL line is a record with "record": "row" (one point x variant) or "run" (provenance of
// one invocation). A point counts as done only when rows of all its variants are present; its
// rows are always written together, so a torn write loses at most the point in flight.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "io/file_lock.hpp"
#include "io/json_values.hpp"

namespace attndev::experiment {

// The folder cannot be used as asked (holds another config's results, corrupt manifest, ...).
// Commands report it as a usage error: the user picks another folder or --force-new.
class OutputDirError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kResultsSchemaVersion = 1;

std::filesystem::path manifest_path(const std::filesystem::path& dir);
std::string shard_file_name(std::size_t index, std::size_t count);

// Parses "results.shard-3-of-8.jsonl" -> (3, 8); false for other names.
bool parse_shard_file_name(const std::string& name, std::size_t& index, std::size_t& count);

// The manifest's config, re-validated (so `report`/`merge` see the same Config the run saw).
// Throws OutputDirError when DIR has no run.json or it is not ours.
Config read_manifest_config(const std::filesystem::path& dir);

// The locks of a results folder (io/file_lock.hpp says why), held for the object's lifetime:
//   DIR/.attndev.lock               the folder: shared by every writer of a results file,
//                                   exclusive for a command that rewrites or deletes files
//                                   (run --force-new, merge, report)
//   DIR/.<results file>.lock        one results file: exclusive for the run or shard writing it
// Shards of one folder hold the folder lock shared and each its own file's lock, so they run at
// the same time. Lock files stay in the folder (removing one could split a lock in two).
class OutputLock {
 public:
  // Downgrades the folder lock of lock_results_file(force_new = true) to shared, once the
  // folder is prepared. Throws OutputDirError if another process took it in between.
  void share_folder();

 private:
  friend OutputLock lock_results_file(const std::filesystem::path&, const std::string&, bool,
                                      const std::string&);
  friend OutputLock lock_folder(const std::filesystem::path&, const std::string&);
  std::filesystem::path dir_;
  std::optional<io::FileLock> folder_, file_;
};

// For a run writing `results_file` (a name in DIR): creates DIR if needed, takes the folder lock
// (exclusive when `force_new`, which may delete files: call prepare_output_dir, then
// share_folder()) and the file's lock. Throws OutputDirError naming the holder's pid when another
// process holds either. `what` is recorded for others to read ("attndev run x.json").
OutputLock lock_results_file(const std::filesystem::path& dir, const std::string& results_file,
                             bool force_new, const std::string& what);

// For a command that rewrites the folder (merge, report): the folder lock, exclusive. Throws
// OutputDirError naming the writers' pids while any run writes into DIR.
OutputLock lock_folder(const std::filesystem::path& dir, const std::string& what);

// Creates DIR if needed and writes run.json, or checks that an existing run.json holds the same
// config hash. A different hash is refused (OutputDirError) unless `force_new`, which removes the
// previous results (run.json, results*.jsonl/csv/json, summary.md) first.
void prepare_output_dir(const std::filesystem::path& dir, const Config& config, bool force_new);

struct StoredResults {
  std::vector<io::Json> rows;  // complete points only, one row per (point, variant), plan order
  std::vector<io::Json> runs;  // "run" records (provenance of each invocation), file order
  std::set<std::string> done_points;  // ids of complete points
  std::size_t duplicate_rows = 0;     // same (point, variant) seen again (another shard, a rerun)
  std::size_t incomplete_points = 0;  // some variants present, not all (not in `rows`)
  // The rows of those points, by point id: one slot per variant, null where the row is missing
  // (the runner computes only those variants).
  std::map<std::string, std::vector<io::Json>> partial;
  // Rows whose variant_key is not their variant's current key (the variant was edited since):
  // recomputed, never shown.
  std::size_t stale_rows = 0;
  std::size_t torn_lines = 0;    // unterminated final lines and unparsable lines (dropped)
  std::size_t foreign_rows = 0;  // rows whose point is not in the plan (dropped)
  // Rows of the plan that cannot be used (a metric missing or not a number, a status this
  // version does not write, a point index or seed that contradicts the point id) and complete
  // lines that are not JSON objects: dropped, so their points are rerun. One entry each,
  // "results.jsonl:17: <why>", for the warning that names them.
  std::vector<std::string> malformed_rows;
  // Second copies of a (point, variant) whose status or metrics differ from the first's (the first
  // is kept): "results.shard-1-of-4.jsonl:12: point <id>, variant \"x\": rmse A here but B in
  // results.jsonl:7 (that row is kept)".
  std::vector<std::string> conflicting_rows;
  std::vector<std::string> files;  // the JSONL files read
  // Content hash of every inputs file, by path, as the run records recorded it (all agree).
  io::Json inputs_hashes = io::Json::object();
};

// A content hash (16 hex digits) of a file's bytes; std::runtime_error naming it when it cannot
// be read. Never follows a FIFO or device (io/safe_open.hpp).
std::string file_content_hash(const std::filesystem::path& path);

// {path: content hash} of every file of the config's `inputs` axis: recorded in each run record,
// so that rows measured on other contents of a file are never mixed with these.
io::Json inputs_content_hashes(const Config& config);

// Reads every results*.jsonl in DIR (or only `only_file` when non-empty). Throws OutputDirError
// naming the file and line when a run record holds another config hash than `config`'s, or an
// inputs file's content hash other than an earlier record's (a record of a config with the same
// points_hash is accepted: its rows are checked by variant key). Rows are matched to the plan by
// point id and to their variant by name and variant_key; the first copy of a (point, variant)
// wins, except that a later copy of a failed row (a retry) replaces it.
StoredResults load_results(const std::filesystem::path& dir, const Config& config, const Plan& plan,
                           const std::string& only_file = "");

// Rewrites `file` (atomically) without torn lines, stale rows (an edited variant's), rows outside
// the plan and duplicates, so that appending the rows the run computes leaves no duplicates.
struct RepairReport {
  std::size_t dropped = 0;            // records dropped (0: the file was left untouched)
  std::size_t superseded = 0;         // of which rows repeated or replaced by a retry
  std::vector<std::string> problems;  // StoredResults::malformed_rows of the file
};
RepairReport repair_results_file(const std::filesystem::path& file, const Config& config,
                                 const Plan& plan);

}  // namespace attndev::experiment
