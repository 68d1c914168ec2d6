// The attribution table: the deviation of an algorithm under a policy with each stage alone in
// the policy's format (the rest fp64) and with each stage raised to fp32 (leave-one-out), against
// a reference, per point (N, ...) over the trials. Built from the rows of a run whose variants
// carry a `"stage"` key (experiment/spec/stage.hpp): what `attndev attribute` runs, and what
// summary.md shows for such a config instead of a column per variant.
//
// Nothing is left silent: a stage override that cannot change a bit under the policy (and one the
// run left out) is a row that says why; one that changed no metric at any point says so too.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "experiment/spec/config.hpp"
#include "io/json_values.hpp"

namespace attndev::experiment {

struct AttributionCell {
  double subject = 0;    // mean of the metric over the trials with a value
  double reference = 0;  // the reference's mean over the same points
  double ratio = 0;      // mean of the per-trial ratios (ratio_<metric>)
  double ratio_min = 0, ratio_max = 0;
  std::size_t n = 0;       // trials with a value
  std::size_t not_ok = 0;  // failed or skipped rows of the subject
  bool has_ratio = false;  // the subject has a ratio reference with values
};

struct AttributionRow {
  StageSpec spec;
  std::string label;      // "raise score to fp32", "only prob (bf16), the rest fp64", ...
  std::string variant;    // the subject variant's name; empty: not in this run
  std::string reference;  // its ratio reference's name (may be empty)
  std::string note;       // why a row cannot change a bit, did not, or was not run
  std::vector<AttributionCell> cells;  // one per Attribution::columns entry
};

// One algorithm under one policy against one kind of reference.
struct AttributionGroup {
  std::string algorithm;  // "flash1"
  std::string policy;     // the base policy's label, "framework-bf16"
  std::string reference;  // "baseline under each row's policy", or a variant and its policy
  std::vector<AttributionRow> rows;
};

struct Attribution {
  std::string metric;                // max_abs, rmse, ... (one of kRatioMetrics)
  std::vector<std::string> columns;  // "N=256", or "N=256 d=64" where several axes vary
  std::size_t trials = 0;
  std::vector<AttributionGroup> groups;
};

// The config has a variant with a `"stage"` key (and so an attribution table).
bool has_stage_variants(const Config& config);

// Throws std::invalid_argument for a metric without a ratio column (kRatioMetrics lists them).
Attribution make_attribution(const Config& config, const std::vector<io::Json>& rows,
                             const std::string& metric);

// One markdown table per group, with a heading and a line saying what a cell holds.
std::string attribution_markdown(const Attribution& attribution);

// Long format, one record per (group, row, column): what the figure is drawn from.
std::string attribution_csv(const Attribution& attribution);

}  // namespace attndev::experiment
