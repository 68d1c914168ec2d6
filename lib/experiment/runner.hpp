// The runner: this shard's unfinished points -> variants -> rows streamed to JSONL.
//
// Points that share Q, K, V (same everything but tile sizes) form an input set: the inputs, the
// FP64 golden (per input format) and every tile-independent variant (baseline) are computed once
// per set, not once per tile size. A point's rows are appended together and flushed, so a kill
// loses at most the point in flight and a rerun redoes exactly that point.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>

#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "io/provenance.hpp"

namespace attndev::experiment {

struct RunOptions {
  std::filesystem::path dir;
  std::size_t shard_index = 0;
  std::size_t shard_count = 1;
  int threads = 0;  // attention::Options::threads (0: all hardware threads)
  bool force_new = false;
  // Points with a failed row are run again (their new rows supersede the old ones); false keeps
  // them as they are (`run --no-retry`).
  bool retry_failed = true;
  // Polled between variants; true stops the run after flushing (SIGINT/SIGTERM).
  std::function<bool()> stop_requested;
  // Called after each point lands: (points of this shard done, points of this shard).
  std::function<void(std::size_t, std::size_t)> on_progress;
  io::Provenance provenance;  // of this invocation; recorded as a "run" line in the JSONL
  std::string config_text;    // the config file verbatim, for provenance
};

struct RunReport {
  std::filesystem::path results_file;
  std::size_t shard_points = 0;      // points of the plan in this shard
  std::size_t already_done = 0;      // found complete in the folder (resume)
  std::size_t retried = 0;           // points found with a failed row, run again (in `ran`)
  std::size_t ran = 0;               // points computed by this invocation
  std::size_t repaired_records = 0;  // torn/partial records dropped from this shard's file
  bool interrupted = false;
  bool tables_written = false;  // results.csv/json + summary.md (unsharded runs only)
  // Over all rows of this shard's points now on disk (resumed ones included).
  std::size_t rows_ok = 0, rows_failed = 0, rows_skipped = 0;
};

// Throws OutputDirError (folder refused), ConfigError (an external command template that cannot
// be run safely), std::runtime_error (I/O, the folder deleted or replaced mid-run).
RunReport run_experiment(const Config& config, const Plan& plan, const RunOptions& options);

}  // namespace attndev::experiment
