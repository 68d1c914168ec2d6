// A pivot of result rows: one metric, grouped by an x column, a series column and optional
// row/column facets, with the spread over the rows that fall into each cell (the trials).
//
// `attndev plot` writes it as CSV and markdown beside the figure, and the drawing script reads
// the CSV: the numbers in a figure are exactly those of the table beside it.
//
// Why a cell must differ only in trial/seed: averaging over an axis the user did not put on the
// figure (head_dim, say) would draw a mean over different experiments as if it were the spread
// over trials. make_pivot refuses that and names the axis instead of averaging silently.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiment/results/interval.hpp"
#include "io/json_values.hpp"

namespace attndev::experiment {

struct PivotSpec {
  std::string metric;  // a numeric column of the rows: rmse, max_abs, ratio_max_abs, ...
  std::string x;       // column on the x axis: seq_len, block_c, ...
  std::string series;  // one line per value: variant (default), policy, block_c, ...
  std::string row;     // facet rows; empty: one
  std::string col;     // facet columns; empty: one
  // The markdown shows each cell's 95% interval of the mean (interval.hpp) too.
  bool ci = false;
};

struct PivotCell {
  std::string row;  // facet labels ("" without the facet)
  std::string col;
  std::string series;  // label of the series value
  std::string x;       // label of the x value
  double mean = 0;
  double min = 0;
  double max = 0;
  // Sample standard deviation (n - 1 in the denominator) of the cell's values; 0 when n == 1,
  // where there is no spread to show.
  double std = 0;
  std::size_t n = 0;  // finite values: the statistics are over these
  // 95% interval of the mean over the n values (interval.hpp: t or bootstrap by n).
  Interval ci;
  // Values that are nan or +-inf (a ratio whose reference deviates by exactly 0): never
  // averaged, never dropped without a word; `non_finite_text` lists them ("inf", "inf, nan").
  std::size_t non_finite = 0;
  std::string non_finite_text;
};

struct Pivot {
  PivotSpec spec;
  // Ordered by facet row, facet column, series, then x: each label in the order it first
  // appears in the rows (plan order), except that all-numeric labels sort by value.
  std::vector<PivotCell> cells;
  bool x_numeric = false;  // every x label is a number: a line plot, not categories
  std::size_t rows_used = 0;
  std::size_t rows_not_ok = 0;      // failed or skipped rows: no numbers to use
  std::size_t rows_no_value = 0;    // ok rows without a number in the metric column
  std::size_t rows_non_finite = 0;  // ok rows whose number is nan or +-inf (in their cells)
};

// A request the rows cannot answer (unknown column, no values, a varying axis left out);
// the message says which and how to fix it.
class PivotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Columns make_pivot never groups over, because they identify a trial, not an experiment.
bool is_trial_column(const std::string& column);

// Throws PivotError.
Pivot make_pivot(const std::vector<io::Json>& rows, const PivotSpec& spec);

// Long format, RFC 4180: [row] [col] series x mean min max std n ci_low ci_high ci_method
// non_finite, headed by the column names of the spec (e.g. variant,seq_len,mean,...). Numbers
// in shortest round-trip form; a cell with no finite value has empty statistics.
std::string pivot_csv(const Pivot& pivot);

// One markdown table per facet: x down, a column per series, "mean (min..max, sd s, n k)" cells
// (with ", 95% CI lo..hi" when spec.ci), non-finite values named in their cells; names are
// escaped (a `|` or a newline in a variant's name cannot break the table).
std::string pivot_markdown(const Pivot& pivot);

}  // namespace attndev::experiment
