#include "experiment/results/result_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "experiment/results/result_row.hpp"
#include "io/atomic_file.hpp"
#include "io/csv.hpp"
#include "io/json_strict.hpp"
#include "io/markdown.hpp"
#include "io/safe_open.hpp"

namespace attndev::experiment {

using io::Json;

std::string short_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string results_csv(const std::vector<Json>& rows) {
  const std::vector<std::string>& columns = result_columns();
  std::string out = io::csv_record(columns);
  std::vector<std::string> fields(columns.size());
  for (const Json& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c)
      fields[c] = row.contains(columns[c]) ? io::cell_text(row[columns[c]]) : "";
    out += io::csv_record(fields);
  }
  return out;
}

Json results_document(const Config& config, const StoredResults& results,
                      const io::Provenance& writer) {
  Json doc;
  doc["schema"] = "attndev.results";
  doc["schema_version"] = kResultsSchemaVersion;
  doc["provenance"] = io::to_json(writer);
  doc["runs"] = results.runs;
  doc["config_name"] = config.name;
  doc["config_hash"] = config.hash;
  doc["config"] = Json(config.effective);
  doc["columns"] = result_columns();
  Json rows = Json::array();
  for (const Json& r : results.rows) {
    Json row = r;
    row.erase("record");
    rows.push_back(std::move(row));
  }
  doc["rows"] = std::move(rows);
  return doc;
}

namespace {

std::string axis_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

struct Cell {
  double sum = 0;
  int n = 0;
  std::string not_ok;  // "skipped"/"failed" when some trial has no value
};

std::string metric_cell(const Cell& c, bool runtime) {
  if (!c.not_ok.empty()) return c.not_ok;
  if (c.n == 0) return "-";
  const double mean = c.sum / c.n;
  if (runtime) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", mean);
    return buffer;
  }
  return short_number(mean);
}

}  // namespace

std::string summary_markdown(const Config& config, const Plan& plan, const StoredResults& results,
                             const io::Provenance& writer) {
  std::string md = "# " + config.name + "\n\n";
  if (!config.description.empty()) md += config.description + "\n\n";
  std::size_t ok = 0, skipped = 0, failed = 0;
  std::map<std::string, int> problems;
  for (const Json& row : results.rows) {
    const Status status = row_status(row);
    if (status.is_ok()) {
      ++ok;
    } else {
      (status.kind == StatusKind::skipped ? skipped : failed) += 1;
      ++problems[row["variant"].get<std::string>() + ": " + status.text()];
    }
  }
  md += "- points: " + std::to_string(results.done_points.size()) + " of " +
        std::to_string(plan.points.size()) + " done (" + std::to_string(plan.skipped.size()) +
        " axis combinations skipped by constraints), " + std::to_string(config.seeds.size()) +
        " trial(s) each\n";
  md += "- rows: " + std::to_string(ok) + " ok, " + std::to_string(failed) + " failed, " +
        std::to_string(skipped) + " skipped\n";
  md += "- config hash " + config.hash + "; attndev " + writer.tool_version + " (git " +
        writer.git_revision + ", " + writer.compiler + "); " + writer.cpu_model + "; written " +
        writer.time_utc + "\n";
  md +=
      "- deviation is measured against the FP64 golden (baseline attention in fp64 on the same "
      "rounded inputs); ratio_* = variant / its reference variant at the same point\n\n";

  // Pivot: one table row per combination of the axes that vary, one column per variant. Values
  // are means over trials; the key keeps plan order (first appearance).
  std::vector<std::string> keys;
  std::map<std::string, std::vector<std::string>> key_axes;
  std::map<std::string, std::size_t> key_pos;
  std::vector<std::vector<const Json*>> by_key;
  for (const Json& row : results.rows) {
    std::string key;
    std::vector<std::string> values;
    for (const std::string& axis : plan.varying_axes) {
      values.push_back(axis_text(row[axis]));
      key += axis + "=" + values.back() + ";";
    }
    if (!key_pos.count(key)) {
      key_pos[key] = keys.size();
      keys.push_back(key);
      key_axes[key] = values;
      by_key.emplace_back();
    }
    by_key[key_pos[key]].push_back(&row);
  }
  const std::string trials_note =
      config.seeds.size() > 1 ? " (mean over " + std::to_string(config.seeds.size()) + " trials)"
                              : "";
  for (const std::string& metric : config.metrics) {
    md += "## " + metric + trials_note + "\n\n";
    // Ratio tables list only variants that have a reference other than themselves.
    const bool ratio = metric.rfind("ratio_", 0) == 0;
    std::vector<bool> shown(config.variants.size(), true);
    for (std::size_t v = 0; v < config.variants.size(); ++v)
      if (ratio)
        shown[v] = config.ratio_reference(v) >= 0 &&
                   static_cast<std::size_t>(config.ratio_reference(v)) != v;
    std::vector<std::string> header = plan.varying_axes;
    if (header.empty()) header.push_back("point");
    for (std::size_t v = 0; v < config.variants.size(); ++v)
      if (shown[v])
        header.push_back(
            ratio ? config.variants[v].name + " / " +
                        config.variants[static_cast<std::size_t>(config.ratio_reference(v))].name
                  : config.variants[v].name);
    std::vector<std::vector<std::string>> table;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      std::vector<std::string> line = key_axes[keys[k]];
      if (line.empty()) line.push_back("all");
      std::vector<Cell> cells(config.variants.size());
      for (const Json* row : by_key[k]) {
        // A std::string against the JSON value: under C++20's rewritten comparisons
        // (GCC 13, clang) `name != json` is ambiguous with nlohmann/json 3.11.
        const std::string variant = (*row)["variant"].get<std::string>();
        std::size_t v = 0;
        while (v < config.variants.size() && config.variants[v].name != variant) ++v;
        if (v == config.variants.size()) continue;
        double x = 0;
        if (const Status status = row_status(*row); !status.is_ok()) {
          cells[v].not_ok = status_kind_name(status.kind);
        } else if (row->contains(metric) && io::json_to_double((*row)[metric], x)) {
          cells[v].sum += x;
          ++cells[v].n;
        }
      }
      for (std::size_t v = 0; v < cells.size(); ++v)
        if (shown[v]) line.push_back(metric_cell(cells[v], metric == "runtime_ms"));
      table.push_back(std::move(line));
    }
    md += io::markdown_table(header, table) + "\n";
  }
  if (!problems.empty()) {
    md += "## Not compared\n\n";
    std::vector<std::vector<std::string>> table;
    for (const auto& [what, n] : problems) table.push_back({what, std::to_string(n)});
    md += io::markdown_table({"variant: status", "rows"}, table) + "\n";
  }
  if (!plan.skipped.empty()) {
    md += "## Skipped by constraints\n\n";
    std::map<std::string, int> reasons;
    for (const SkippedPoint& s : plan.skipped) ++reasons[s.reason];
    std::vector<std::vector<std::string>> table;
    for (const auto& [reason, n] : reasons) table.push_back({reason, std::to_string(n)});
    md += io::markdown_table({"reason", "axis combinations"}, table) + "\n";
  }
  return md;
}

std::size_t table_rows(const std::filesystem::path& dir) {
  std::size_t json_rows = 0, csv_rows = 0;
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir / "results.json", ec)) {
    const std::string text = io::read_regular_file(dir / "results.json");
    if (!io::json_text_error(text)) {
      const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (doc.is_object() && doc.contains("rows") && doc["rows"].is_array())
        json_rows = doc["rows"].size();
    }
  }
  if (std::filesystem::is_regular_file(dir / "results.csv", ec)) {
    // Records, not lines: a quoted field (a status message) may hold a newline.
    const std::string text = io::read_regular_file(dir / "results.csv");
    std::size_t records = 0;
    bool quoted = false;
    for (char c : text) {
      if (c == '"') quoted = !quoted;
      if (c == '\n' && !quoted) ++records;
    }
    if (!text.empty() && text.back() != '\n') ++records;
    csv_rows = records > 0 ? records - 1 : 0;  // the header
  }
  return std::max(json_rows, csv_rows);
}

void check_tables_not_shrinking(const std::filesystem::path& dir, std::size_t rows) {
  const std::size_t existing = table_rows(dir);
  if (existing <= rows) return;
  throw TablesWouldShrink(
      (dir / "results.csv").string() + " and results.json hold " + std::to_string(existing) +
      " rows but the results*.jsonl files in " + dir.string() + " hold only " +
      std::to_string(rows) +
      " rows: rebuilding would lose the rows the tables still have. The JSONL files are the source "
      "of "
      "truth: restore the missing ones, or rerun the same `attndev run` to recompute the missing "
      "points; to rebuild the tables from what is there, move results.csv and results.json away "
      "first");
}

void write_result_tables(const std::filesystem::path& dir, const Config& config, const Plan& plan,
                         const StoredResults& results, const io::Provenance& writer) {
  check_tables_not_shrinking(dir, results.rows.size());
  io::write_regular_file_atomic(dir / "results.csv", results_csv(results.rows));
  io::write_regular_file_atomic(dir / "results.json",
                        results_document(config, results, writer)
                                .dump(1, ' ', false, Json::error_handler_t::replace) +
                            "\n");
  io::write_regular_file_atomic(dir / "summary.md", summary_markdown(config, plan, results, writer));
}

}  // namespace attndev::experiment
