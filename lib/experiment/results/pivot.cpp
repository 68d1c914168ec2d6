#include "experiment/results/pivot.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "experiment/results/result_tables.hpp"
#include "experiment/spec/config.hpp"
#include "io/csv.hpp"
#include "io/markdown.hpp"
#include "io/text_escape.hpp"

namespace attndev::experiment {
// Named rather than anonymous: the library compiles in unity batches, where file-local helper
// names of different files would meet in one translation unit.
namespace pivot_detail {

using io::Json;

// Labels in first-appearance order, or by value when every label is a number (seq_len 256 <
// 1024 although "1024" < "256" as text).
class Labels {
 public:
  std::size_t add(const std::string& label) {
    const auto [it, inserted] = index_.emplace(label, order_.size());
    if (inserted) order_.push_back(label);
    return it->second;
  }
  bool numeric() const {
    return !order_.empty() && std::all_of(order_.begin(), order_.end(), [](const std::string& s) {
      double v = 0;
      return to_number(s, v);
    });
  }
  // rank[i]: position of the i-th added label in display order.
  std::vector<std::size_t> ranks() const {
    std::vector<std::size_t> order(order_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (numeric()) {
      // std::sort with the first-appearance index as tie-break, not std::stable_sort: that
      // instantiates libstdc++ 12's deprecated get_temporary_buffer, which clang 19 reports.
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        double va = 0;
        double vb = 0;
        to_number(order_[a], va);
        to_number(order_[b], vb);
        return va < vb || (va == vb && a < b);
      });
    }
    std::vector<std::size_t> rank(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
    return rank;
  }
  const std::string& operator[](std::size_t i) const { return order_[i]; }

  static bool to_number(const std::string& s, double& v) {
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(s.data(), end, v);
    return ec == std::errc() && ptr == end;
  }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<std::string> order_;
};

std::string label_of(const Json& row, const std::string& column) {
  const auto it = row.find(column);
  if (it == row.end()) return "";
  return io::cell_text(*it);
}

// The columns a request may name: every column some row has, for the error message.
std::string known_columns(const std::vector<Json>& rows) {
  std::set<std::string> names;
  for (const Json& row : rows) {
    for (auto it = row.begin(); it != row.end(); ++it) {
      if (it.key() != "record") names.insert(it.key());
    }
  }
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

void require_column(const std::vector<Json>& rows, const std::string& column,
                    const std::string& option) {
  for (const Json& row : rows) {
    if (row.contains(column)) return;
  }
  throw PivotError(option + " " + column +
                   ": no row has this column; columns of these rows: " + known_columns(rows));
}

struct CellKey {
  std::size_t row = 0, col = 0, series = 0, x = 0;
  auto tie() const { return std::tie(row, col, series, x); }
  bool operator<(const CellKey& o) const { return tie() < o.tie(); }
};

struct CellValues {
  std::vector<double> values;   // finite
  std::vector<double> special;  // nan, +-inf
  // What the cell's first row had in each experiment column; a later row that differs means
  // the cell mixes experiments (see the header).
  std::map<std::string, std::string> fixed;
};

// Axes and the variant: what must be the same for rows to be trials of one experiment.
std::vector<std::string> experiment_columns(const PivotSpec& spec) {
  std::vector<std::string> columns;
  for (std::string_view axis : kAxisNames) columns.emplace_back(axis);
  columns.emplace_back("variant");
  std::erase_if(columns, [&](const std::string& c) {
    return c == spec.x || c == spec.series || c == spec.row || c == spec.col;
  });
  return columns;
}

void check_same_experiment(CellValues& cell, const Json& row,
                           const std::vector<std::string>& columns) {
  for (const std::string& column : columns) {
    const std::string value = label_of(row, column);
    const auto [it, inserted] = cell.fixed.emplace(column, value);
    if (!inserted && it->second != value) {
      throw PivotError(column + " takes more than one value (" + it->second + ", " + value +
                       ") within one cell of the figure, which would average different "
                       "experiments as if they were trials: put " +
                       column + " on --series, --row or --col, or plot a run where it is fixed");
    }
  }
}

// "inf", "-inf, nan": each kind of non-finite value once, in a fixed order.
std::string non_finite_text(const std::vector<double>& special) {
  std::string text;
  const auto add = [&](bool present, const char* name) {
    if (present) text += (text.empty() ? "" : ", ") + std::string(name);
  };
  add(std::any_of(special.begin(), special.end(), [](double v) { return v > 0; }), "inf");
  add(std::any_of(special.begin(), special.end(), [](double v) { return v < 0; }), "-inf");
  add(std::any_of(special.begin(), special.end(), [](double v) { return std::isnan(v); }), "nan");
  return text;
}

void fill_stats(PivotCell& cell, const std::vector<double>& v) {
  cell.n = v.size();
  if (v.empty()) return;
  cell.min = *std::min_element(v.begin(), v.end());
  cell.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  cell.mean = sum / static_cast<double>(v.size());
  // Two passes: the deviations are taken from the mean, not accumulated as sum of squares
  // minus square of sums, which cancels catastrophically when the spread is small.
  double ss = 0;
  for (double x : v) ss += (x - cell.mean) * (x - cell.mean);
  cell.std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  cell.ci = mean_interval_95(v);
}

}  // namespace pivot_detail

using io::Json;

bool is_trial_column(const std::string& column) {
  return column == "trial" || column == "seed" || column == "point_id" || column == "point_index";
}

Pivot make_pivot(const std::vector<Json>& rows, const PivotSpec& spec) {
  using namespace pivot_detail;
  if (rows.empty()) throw PivotError("the results hold no rows: run the sweep first");
  require_column(rows, spec.metric, "--metric");
  require_column(rows, spec.x, "--x");
  require_column(rows, spec.series, "--series");
  if (!spec.row.empty()) require_column(rows, spec.row, "--row");
  if (!spec.col.empty()) require_column(rows, spec.col, "--col");
  for (const std::string* c : {&spec.x, &spec.series, &spec.row, &spec.col}) {
    if (is_trial_column(*c)) {
      throw PivotError(*c +
                       " identifies a trial, not an experiment: the spread over trials is "
                       "what each cell shows; choose an axis or variant column");
    }
  }

  Pivot pivot;
  pivot.spec = spec;
  Labels row_labels, col_labels, series_labels, x_labels;
  std::map<CellKey, CellValues> cells;
  const std::vector<std::string> fixed_columns = experiment_columns(spec);
  for (const Json& row : rows) {
    if (label_of(row, "status") != "ok") {
      ++pivot.rows_not_ok;
      continue;
    }
    double value = 0;
    const auto it = row.find(spec.metric);
    if (it == row.end() || !io::json_to_double(*it, value)) {
      ++pivot.rows_no_value;
      continue;
    }
    const CellKey key{row_labels.add(spec.row.empty() ? "" : label_of(row, spec.row)),
                      col_labels.add(spec.col.empty() ? "" : label_of(row, spec.col)),
                      series_labels.add(label_of(row, spec.series)),
                      x_labels.add(label_of(row, spec.x))};
    CellValues& cell = cells[key];
    check_same_experiment(cell, row, fixed_columns);
    if (std::isfinite(value)) {
      cell.values.push_back(value);
      ++pivot.rows_used;
    } else {
      cell.special.push_back(value);
      ++pivot.rows_non_finite;
    }
  }
  if (pivot.rows_used == 0) {
    std::string why = std::to_string(pivot.rows_not_ok) + " rows failed or skipped, " +
                      std::to_string(pivot.rows_no_value) + " without the column";
    if (pivot.rows_no_value > 0 && spec.metric.rfind("ratio_", 0) == 0)
      why += " (ratio_* columns are empty for variants without ratio_to)";
    if (pivot.rows_non_finite > 0)
      why += ", " + std::to_string(pivot.rows_non_finite) +
             " with a non-finite value (nan or inf: a ratio is inf where the reference deviates "
             "by exactly 0)";
    throw PivotError("--metric " + spec.metric + ": no ok row has a finite number in it (" + why +
                     ")");
  }
  pivot.x_numeric = x_labels.numeric();
  const auto rr = row_labels.ranks(), cr = col_labels.ranks(), sr = series_labels.ranks(),
             xr = x_labels.ranks();
  std::vector<std::pair<CellKey, const CellValues*>> ordered;
  for (const auto& [key, values] : cells) {
    ordered.emplace_back(CellKey{rr[key.row], cr[key.col], sr[key.series], xr[key.x]}, &values);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Ranks back to labels: invert each rank table once.
  const auto invert = [](const std::vector<std::size_t>& rank) {
    std::vector<std::size_t> at(rank.size());
    for (std::size_t i = 0; i < rank.size(); ++i) at[rank[i]] = i;
    return at;
  };
  const auto ri = invert(rr), ci = invert(cr), si = invert(sr), xi = invert(xr);
  for (const auto& [key, values] : ordered) {
    PivotCell cell;
    cell.row = row_labels[ri[key.row]];
    cell.col = col_labels[ci[key.col]];
    cell.series = series_labels[si[key.series]];
    cell.x = x_labels[xi[key.x]];
    fill_stats(cell, values->values);
    cell.non_finite = values->special.size();
    cell.non_finite_text = non_finite_text(values->special);
    pivot.cells.push_back(cell);
  }
  return pivot;
}

std::string pivot_csv(const Pivot& pivot) {
  const PivotSpec& s = pivot.spec;
  std::vector<std::string> header;
  if (!s.row.empty()) header.push_back(s.row);
  if (!s.col.empty()) header.push_back(s.col);
  header.push_back(s.series);
  header.push_back(s.x);
  for (const char* c :
       {"mean", "min", "max", "std", "n", "ci_low", "ci_high", "ci_method", "non_finite"})
    header.emplace_back(c);
  std::string out = io::csv_record(header);
  for (const PivotCell& c : pivot.cells) {
    std::vector<std::string> f;
    if (!s.row.empty()) f.push_back(c.row);
    if (!s.col.empty()) f.push_back(c.col);
    f.push_back(c.series);
    f.push_back(c.x);
    for (double v : {c.mean, c.min, c.max, c.std})
      f.push_back(c.n ? io::format_number(v) : std::string());
    f.push_back(std::to_string(c.n));
    const bool ci = c.ci.method != IntervalMethod::none;
    f.push_back(ci ? io::format_number(c.ci.low) : std::string());
    f.push_back(ci ? io::format_number(c.ci.high) : std::string());
    f.emplace_back(interval_method_name(c.ci.method));
    f.push_back(c.non_finite ? std::to_string(c.non_finite) + " " + c.non_finite_text
                             : std::string());
    out += io::csv_record(f);
  }
  return out;
}

namespace pivot_detail {

// A label in a markdown heading: one line (a newline in a variant's name would end the heading),
// control characters written as \xNN (io::printable: never raw ESC to a terminal).
std::string one_line(const std::string& text) {
  std::string out = text;
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::replace(out.begin(), out.end(), '\r', ' ');
  return io::printable(out);
}

std::string markdown_cell(const PivotCell& c, bool ci) {
  std::string text;
  if (c.n > 0) {
    // Appended piece by piece: GCC 12 reports a false -Wrestrict for "literal" + rvalue
    // string chains inlined here.
    for (const std::string& piece : {short_number(c.mean), std::string(" ("), short_number(c.min),
                                     std::string(".."), short_number(c.max), std::string(", sd "),
                                     short_number(c.std), std::string(", n "), std::to_string(c.n)})
      text += piece;
    if (ci && c.ci.method != IntervalMethod::none) {
      text.append(", 95% CI ").append(short_number(c.ci.low)).append("..");
      text.append(short_number(c.ci.high)).append(" ").append(interval_method_name(c.ci.method));
    }
    text += ")";
  }
  if (c.non_finite > 0) {
    text.append(c.n > 0 ? " + " : "").append(c.non_finite_text).append(" (");
    text.append(std::to_string(c.non_finite)).append(c.non_finite == 1 ? " trial" : " trials");
    text.append(c.n > 0 ? ", not in the mean)" : ")");
  }
  return text;
}

}  // namespace pivot_detail

std::string pivot_markdown(const Pivot& pivot) {
  using pivot_detail::one_line;
  const PivotSpec& s = pivot.spec;
  std::string out = "# " + one_line(s.metric + " by " + s.x + " and " + s.series) + "\n\n";
  out +=
      "Cells: mean over trials (min..max, sd = sample standard deviation, n = trials with a "
      "finite value";
  if (s.ci)
    out += "; 95% CI of the mean: t = Student's t interval (fewer than " +
           std::to_string(kBootstrapMinimum) + " trials), bootstrap = percentile bootstrap of " +
           std::to_string(kBootstrapResamples) + " resamples";
  out += "). " + std::to_string(pivot.rows_used) + " rows used, " +
         std::to_string(pivot.rows_not_ok) + " failed or skipped, " +
         std::to_string(pivot.rows_no_value) + " without a value";
  if (pivot.rows_non_finite > 0)
    out += ", " + std::to_string(pivot.rows_non_finite) +
           " non-finite (named in their cells, not in any mean)";
  out += ".\n";
  std::size_t begin = 0;
  while (begin < pivot.cells.size()) {
    std::size_t end = begin;
    while (end < pivot.cells.size() && pivot.cells[end].row == pivot.cells[begin].row &&
           pivot.cells[end].col == pivot.cells[begin].col)
      ++end;
    // One facet: cells[begin, end), ordered by series then x.
    std::vector<std::string> series, xs;
    for (std::size_t i = begin; i < end; ++i) {
      if (std::find(series.begin(), series.end(), pivot.cells[i].series) == series.end())
        series.push_back(pivot.cells[i].series);
      if (std::find(xs.begin(), xs.end(), pivot.cells[i].x) == xs.end())
        xs.push_back(pivot.cells[i].x);
    }
    if (pivot.x_numeric) {
      // Labels are distinct; equal values written differently ("1", "1.0") fall back to text
      // order, so std::sort (see Labels::ranks for why not stable_sort) gives one order.
      std::sort(xs.begin(), xs.end(), [](const std::string& a, const std::string& b) {
        const double va = std::stod(a);
        const double vb = std::stod(b);
        return va < vb || (va == vb && a < b);
      });
    }
    out += "\n";
    if (!s.row.empty() || !s.col.empty()) {
      std::string heading;
      if (!s.row.empty()) heading += s.row + " = " + pivot.cells[begin].row;
      if (!s.row.empty() && !s.col.empty()) heading += ", ";
      if (!s.col.empty()) heading += s.col + " = " + pivot.cells[begin].col;
      out += "## " + one_line(heading) + "\n\n";
    }
    std::vector<std::string> header = {s.x};
    for (const std::string& name : series) header.push_back(s.series + " = " + name);
    std::vector<std::vector<std::string>> table;
    for (const std::string& x : xs) {
      std::vector<std::string> line = {x};
      for (const std::string& name : series) {
        const auto first = pivot.cells.begin() + static_cast<std::ptrdiff_t>(begin);
        const auto last = pivot.cells.begin() + static_cast<std::ptrdiff_t>(end);
        const auto it = std::find_if(
            first, last, [&](const PivotCell& c) { return c.series == name && c.x == x; });
        line.push_back(it == last ? std::string() : pivot_detail::markdown_cell(*it, s.ci));
      }
      table.push_back(std::move(line));
    }
    out += io::markdown_table(header, table);
    begin = end;
  }
  return out;
}

}  // namespace attndev::experiment
