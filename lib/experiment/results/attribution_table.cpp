#include "experiment/results/attribution_table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "experiment/results/result_row.hpp"
#include "experiment/results/result_tables.hpp"
#include "io/csv.hpp"
#include "io/markdown.hpp"

namespace attndev::experiment {
// Named rather than anonymous: the library compiles in unity batches (see pivot.cpp).
namespace attribution_detail {

using io::Json;
using numerics::Stage;

// Short names of the axes in column labels.
std::string axis_label(std::string_view axis) {
  static const std::map<std::string_view, std::string_view> kShort = {
      {"seq_len", "N"},
      {"seq_len_kv", "N_kv"},
      {"head_dim", "d"},
      {"block_r", "Br"},
      {"block_c", "Bc"},
      {"batch", "B"},
      {"heads", "H"},
      {"distribution", "dist"},
      {"inputs", "inputs"},
      {"causal", "causal"},
      {"scale_placement", "scale on"}};
  const auto it = kShort.find(axis);
  return std::string(it == kShort.end() ? axis : it->second);
}

std::string text_of(const Json& row, const std::string& key) {
  const auto it = row.find(key);
  return it == row.end() ? std::string() : io::cell_text(*it);
}

bool number_of(const Json& row, const std::string& key, double& out) {
  const auto it = row.find(key);
  return it != row.end() && io::json_to_double(*it, out);
}

// Orders column keys: each axis value by number where both are numbers, else as text.
bool key_less(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    double x = 0, y = 0;
    const auto px = std::from_chars(a[i].data(), a[i].data() + a[i].size(), x);
    const auto py = std::from_chars(b[i].data(), b[i].data() + b[i].size(), y);
    if (px.ec == std::errc() && py.ec == std::errc() && x != y) return x < y;
    return a[i] < b[i];
  }
  return a.size() < b.size();
}

// Whether the value of axis `a` decides that of `b` in every row (seq_len_kv following seq_len).
bool determines(const std::vector<Json>& rows, const std::string& a, const std::string& b) {
  std::map<std::string, std::string> seen;
  for (const Json& row : rows) {
    const auto [it, inserted] = seen.emplace(text_of(row, a), text_of(row, b));
    if (!inserted && it->second != text_of(row, b)) return false;
  }
  return true;
}

// The point axes that take more than one value among the rows, less those another of them
// decides: what a column stands for.
std::vector<std::string> varying_axes(const std::vector<Json>& rows) {
  std::vector<std::string> out;
  for (std::string_view axis : kAxisNames) {
    const std::string key(axis);
    std::set<std::string> values;
    for (const Json& row : rows) values.insert(text_of(row, key));
    if (values.size() < 2) continue;
    if (std::none_of(out.begin(), out.end(),
                     [&](const std::string& a) { return determines(rows, a, key); }))
      out.push_back(key);
  }
  return out;
}

std::string row_label(const StageSpec& spec, const numerics::PrecisionPolicy& base,
                      const std::string& base_label) {
  switch (spec.mode) {
    case StageMode::none:
      return "as is (" + base_label + ")";
    case StageMode::only: {
      std::string text = "only ";
      for (std::size_t i = 0; i < spec.stages.size(); ++i)
        text += std::string(i ? ", " : "") + numerics::stage_name(spec.stages[i]) + " (" +
                numerics::format_name(base[spec.stages[i]]) + ")";
      return text + ", the rest fp64";  // inputs as the policy has them (stage.hpp)
    }
    case StageMode::raise:
      return "raise " + spec.stages_text() + " to " + numerics::format_name(kRaiseFormat) +
             (spec.stages.size() > 1 ? " (together)" : "");
  }
  return spec.text();
}

// What is known without running: why the override cannot change a bit, why a group moves
// together, what the input stage means here.
std::string static_note(const Variant& v, const StageSpec& spec) {
  std::string note;
  const auto add = [&note](const std::string& s) { note += (note.empty() ? "" : "; ") + s; };
  const bool emulated = v.backend == Backend::cpu;
  if (emulated) {
    if (const std::string why = stage_no_effect(v.algorithm, v.base_policy, spec); !why.empty())
      add("cannot change a bit: " + why);
  }
  if (emulated && spec.mode == StageMode::raise && spec.stages.size() > 1) {
    for (Stage s : spec.stages) {
      const std::string alone =
          stage_no_effect(v.algorithm, v.base_policy, StageSpec{StageMode::raise, {s}});
      const numerics::Format f = v.base_policy[s];
      if (!alone.empty() && f != kRaiseFormat && format_fits(f, kRaiseFormat))
        add(std::string("moved together: raising ") + numerics::stage_name(s) +
            " alone cannot change a bit (" + alone + ")");
    }
  }
  if (spec.contains(Stage::input) && spec.mode == StageMode::only)
    add("every row rounds the inputs as the policy does and the golden runs on the same rounded "
        "inputs: this row would be the algorithm's fp64 arithmetic alone");
  if (spec.contains(Stage::input) && spec.mode == StageMode::raise)
    add("the golden is recomputed from the fp32 inputs (it always sees the variant's inputs)");
  return note;
}

// Every metric of the two rows equal, to the last bit (and the worst element the same one).
// max_rel is left out: its floor is a unit roundoff of the output format, so raising output
// moves it even where no bit of O changes.
bool same_metrics(const Json& a, const Json& b) {
  for (std::string_view m : kDeviationMetrics) {
    const std::string key(m);
    if (key != "max_rel" && text_of(a, key) != text_of(b, key)) return false;
  }
  return text_of(a, "worst_index") == text_of(b, "worst_index");
}

struct Lookup {
  // (variant, point_id) -> row
  std::map<std::pair<std::string, std::string>, const Json*> rows;
  const Json* find(const std::string& variant, const std::string& point) const {
    const auto it = rows.find({variant, point});
    return it == rows.end() ? nullptr : it->second;
  }
};

// Which column a row belongs to (the values of the varying axes), by index.
using ColumnOf = std::map<std::string, std::size_t>;  // point_id -> column

void fill_cells(AttributionRow& out, const std::vector<Json>& rows, const ColumnOf& column_of,
                std::size_t columns, const std::string& metric, const std::string& none_variant,
                const Lookup& lookup) {
  out.cells.assign(columns, AttributionCell{});
  std::vector<double> sums(columns, 0), ref_sums(columns, 0), ratio_sums(columns, 0);
  std::vector<std::size_t> ref_n(columns, 0), ratio_n(columns, 0);
  bool unchanged = !none_variant.empty() && none_variant != out.variant;
  std::size_t compared = 0;
  for (const Json& row : rows) {
    if (text_of(row, "variant") != out.variant) continue;
    const std::string point = text_of(row, "point_id");
    const auto col = column_of.find(point);
    if (col == column_of.end()) continue;
    AttributionCell& cell = out.cells[col->second];
    double value = 0;
    if (!row_status(row).is_ok() || !number_of(row, metric, value)) {
      ++cell.not_ok;
      unchanged = false;
      continue;
    }
    sums[col->second] += value;
    ++cell.n;
    double ratio = 0, ref = 0;
    if (number_of(row, "ratio_" + metric, ratio)) {
      const std::size_t k = ratio_n[col->second]++;
      ratio_sums[col->second] += ratio;
      cell.ratio_min = k == 0 ? ratio : std::min(cell.ratio_min, ratio);
      cell.ratio_max = k == 0 ? ratio : std::max(cell.ratio_max, ratio);
      cell.has_ratio = true;
    }
    if (const Json* r = lookup.find(out.reference, point); r && number_of(*r, metric, ref)) {
      ref_sums[col->second] += ref;
      ++ref_n[col->second];
    }
    if (unchanged) {
      const Json* none = lookup.find(none_variant, point);
      unchanged = none != nullptr && same_metrics(row, *none);
      ++compared;
    }
  }
  for (std::size_t c = 0; c < columns; ++c) {
    AttributionCell& cell = out.cells[c];
    if (cell.n) cell.subject = sums[c] / static_cast<double>(cell.n);
    if (ref_n[c]) cell.reference = ref_sums[c] / static_cast<double>(ref_n[c]);
    if (ratio_n[c]) cell.ratio = ratio_sums[c] / static_cast<double>(ratio_n[c]);
  }
  if (unchanged && compared > 0 && out.spec.mode == StageMode::raise)
    out.note += std::string(out.note.empty() ? "" : "; ") +
                "measured: every metric equal to the policy as is at every point and trial";
}

// Rows first by mode (as is, only, raise), then by the last stage they move, single stages
// before the groups that end at the same stage.
bool row_before(const AttributionRow& a, const AttributionRow& b) {
  const auto key = [](const StageSpec& s) {
    const int last = s.stages.empty() ? -1 : static_cast<int>(s.stages.back());
    return std::tuple(static_cast<int>(s.mode), last, s.stages.size());
  };
  return key(a.spec) < key(b.spec);
}

std::string group_key(const Config& config, std::size_t v, std::string& reference_text) {
  const Variant& x = config.variants[v];
  std::string key = variant_algorithm_name(x) + "|" + x.base_policy_label + "|" +
                    backend_name(x.backend) + "|" + (x.block_r ? std::to_string(*x.block_r) : "") +
                    "x" + (x.block_c ? std::to_string(*x.block_c) : "");
  const int ref = config.ratio_reference(v);
  reference_text = "none (no ratio_to)";
  if (ref >= 0) {
    const Variant& r = config.variants[static_cast<std::size_t>(ref)];
    if (r.stage && x.stage && *r.stage == *x.stage) {
      reference_text = variant_algorithm_name(r) + " under each row's policy";
      key += "|follows " + variant_algorithm_name(r) + " " + r.base_policy_label;
      if (r.base_policy_label != x.base_policy_label)
        reference_text += " (" + r.base_policy_label + " as the base)";
    } else {
      reference_text = r.name + " (" + r.policy_label + ")";
      key += "|fixed " + r.name;
    }
  }
  return key;
}

}  // namespace attribution_detail

bool has_stage_variants(const Config& config) {
  return std::any_of(config.variants.begin(), config.variants.end(),
                     [](const Variant& v) { return v.stage.has_value(); });
}

Attribution make_attribution(const Config& config, const std::vector<io::Json>& rows,
                             const std::string& metric) {
  using namespace attribution_detail;
  if (std::find(std::begin(kRatioMetrics), std::end(kRatioMetrics), metric) ==
      std::end(kRatioMetrics))
    throw std::invalid_argument("metric " + metric + " has no ratio column");
  Attribution out;
  out.metric = metric;
  out.trials = config.seeds.size();

  // Columns: the combinations of the varying axes, ordered by value.
  const std::vector<std::string> axes = varying_axes(rows);
  std::map<std::string, std::vector<std::string>> key_of_point;
  std::vector<std::vector<std::string>> keys;
  for (const Json& row : rows) {
    std::vector<std::string> key;
    for (const std::string& axis : axes) key.push_back(text_of(row, axis));
    key_of_point[text_of(row, "point_id")] = key;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end(), key_less);
  for (const auto& key : keys) {
    std::string label;
    for (std::size_t i = 0; i < axes.size(); ++i)
      label += (i ? " " : "") + axis_label(axes[i]) + "=" + key[i];
    out.columns.push_back(label.empty() ? "all" : label);
  }
  ColumnOf column_of;
  for (const auto& [point, key] : key_of_point)
    column_of[point] =
        static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
  Lookup lookup;
  for (const Json& row : rows)
    lookup.rows[{text_of(row, "variant"), text_of(row, "point_id")}] = &row;

  // Subjects: stage variants that are no other variant's ratio reference.
  std::vector<bool> is_reference(config.variants.size(), false);
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    if (const int r = config.ratio_reference(v); r >= 0 && static_cast<std::size_t>(r) != v)
      is_reference[static_cast<std::size_t>(r)] = true;
  std::vector<std::string> group_keys;
  std::vector<std::size_t> group_first;  // a variant of each group, for the static notes
  for (std::size_t v = 0; v < config.variants.size(); ++v) {
    const Variant& x = config.variants[v];
    if (!x.stage || is_reference[v]) continue;
    std::string reference_text;
    const std::string key = group_key(config, v, reference_text);
    auto it = std::find(group_keys.begin(), group_keys.end(), key);
    if (it == group_keys.end()) {
      group_keys.push_back(key);
      group_first.push_back(v);
      out.groups.push_back({variant_algorithm_name(x), x.base_policy_label, reference_text, {}});
      it = group_keys.end() - 1;
    }
    AttributionGroup& group = out.groups[static_cast<std::size_t>(it - group_keys.begin())];
    if (std::any_of(group.rows.begin(), group.rows.end(),
                    [&](const AttributionRow& r) { return r.spec == *x.stage; }))
      continue;  // the same override twice in one group: the first variant stands for it
    AttributionRow row;
    row.spec = *x.stage;
    row.label = row_label(row.spec, x.base_policy, x.base_policy_label);
    row.variant = x.name;
    const int ref = config.ratio_reference(v);
    if (ref >= 0) row.reference = config.variants[static_cast<std::size_t>(ref)].name;
    row.note = static_note(x, row.spec);
    group.rows.push_back(std::move(row));
  }

  for (std::size_t g = 0; g < out.groups.size(); ++g) {
    AttributionGroup& group = out.groups[g];
    const Variant& first = config.variants[group_first[g]];
    // Every single stage of each mode the run has, run or not: a left-out stage is a row too.
    for (StageMode mode : {StageMode::only, StageMode::raise}) {
      if (std::none_of(group.rows.begin(), group.rows.end(),
                       [&](const AttributionRow& r) { return r.spec.mode == mode; }))
        continue;
      for (Stage s : numerics::kAllStages) {
        const StageSpec spec{mode, {s}};
        if (std::any_of(group.rows.begin(), group.rows.end(),
                        [&](const AttributionRow& r) { return r.spec == spec; }))
          continue;
        AttributionRow row;
        row.spec = spec;
        row.label = row_label(spec, first.base_policy, first.base_policy_label);
        row.note = static_note(first, spec);
        row.note = (row.note.empty() ? std::string("not run") : "not run; " + row.note);
        group.rows.push_back(std::move(row));
      }
    }
    std::sort(group.rows.begin(), group.rows.end(), row_before);
    std::string none_variant;
    for (const AttributionRow& r : group.rows)
      if (r.spec.mode == StageMode::none) none_variant = r.variant;
    for (AttributionRow& r : group.rows) {
      if (r.variant.empty()) {
        r.cells.assign(out.columns.size(), AttributionCell{});
        continue;
      }
      fill_cells(r, rows, column_of, out.columns.size(), metric, none_variant, lookup);
    }
  }
  return out;
}

std::string attribution_markdown(const Attribution& a) {
  std::string md;
  for (const AttributionGroup& g : a.groups) {
    md += "## " + g.algorithm + " under " + g.policy + ": which stage causes the deviation\n\n";
    md += a.metric + " vs the FP64 golden, mean over " + std::to_string(a.trials) +
          " trial(s); reference: " + g.reference + ". Each cell: " + g.algorithm +
          " / reference = ratio (mean of the per-trial ratios), then " + g.algorithm +
          "'s and the reference's " + a.metric + ".\n\n";
    std::vector<std::string> header = {"stages"};
    header.insert(header.end(), a.columns.begin(), a.columns.end());
    header.emplace_back("note");
    std::vector<std::vector<std::string>> table;
    for (const AttributionRow& r : g.rows) {
      std::vector<std::string> line = {r.label};
      for (const AttributionCell& c : r.cells) {
        if (r.variant.empty()) {
          line.emplace_back("-");
        } else if (c.n == 0) {
          line.emplace_back(c.not_ok ? "failed or skipped" : "no value");
        } else if (c.has_ratio) {
          line.push_back(short_number(c.ratio) + " (" + short_number(c.subject) + " / " +
                         short_number(c.reference) + ")");
        } else {
          line.push_back(short_number(c.subject));
        }
      }
      line.push_back(r.note);
      table.push_back(std::move(line));
    }
    md += io::markdown_table(header, table) + "\n";
  }
  return md;
}

std::string attribution_csv(const Attribution& a) {
  std::string out =
      io::csv_record({"algorithm", "policy", "reference", "stage", "label", "column", "subject",
                      "reference_value", "ratio", "ratio_min", "ratio_max", "n", "note"});
  for (const AttributionGroup& g : a.groups) {
    for (const AttributionRow& r : g.rows) {
      for (std::size_t c = 0; c < a.columns.size(); ++c) {
        const AttributionCell& cell = r.cells[c];
        const bool value = !r.variant.empty() && cell.n > 0;
        const bool ratio = value && cell.has_ratio;
        out += io::csv_record({g.algorithm, g.policy, g.reference, r.spec.text(), r.label,
                               a.columns[c], value ? io::format_number(cell.subject) : "",
                               ratio ? io::format_number(cell.reference) : "",
                               ratio ? io::format_number(cell.ratio) : "",
                               ratio ? io::format_number(cell.ratio_min) : "",
                               ratio ? io::format_number(cell.ratio_max) : "",
                               std::to_string(cell.n), r.note});
      }
    }
  }
  return out;
}

}  // namespace attndev::experiment
