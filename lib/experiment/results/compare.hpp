// `attndev compare A B`: line up two result folders on matching (point id, variant) and show how
// each metric moved. Timing columns are reported apart: they differ between any two runs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/json_values.hpp"

namespace attndev::experiment {

struct MetricChange {
  std::string metric;
  std::size_t compared = 0;   // pairs where both values are numbers
  std::size_t identical = 0;  // bit-equal (NaN == NaN)
  double geomean_ratio = 1;   // geometric mean of B/A over pairs with both > 0
  double max_ratio = 1, min_ratio = 1;
};

struct Comparison {
  std::size_t matched = 0, only_a = 0, only_b = 0;
  std::size_t status_changes = 0;
  std::vector<MetricChange> metrics;
  std::string table;  // markdown: one line per matched (point, variant), the first metric
};

// Metrics default to A's config `metrics` when empty. Throws OutputDirError for a folder that
// cannot be read, std::invalid_argument for a metric name that is not a metric column.
Comparison compare_results(const std::filesystem::path& a, const std::filesystem::path& b,
                           std::vector<std::string> metrics, std::size_t max_table_rows);

}  // namespace attndev::experiment
