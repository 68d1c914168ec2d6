// The files a person or a script reads after a run, all rebuilt from rows alone (so `attndev
// report` reproduces them from results.jsonl without recomputing):
//   results.csv   long format, RFC 4180, one row per (point, variant), columns of result_row.hpp
//   results.json  versioned document: provenance, config and hash, columns, rows
//   summary.md    pivot tables (axes that vary x variants), one per selected metric
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/results/results_store.hpp"
#include "io/provenance.hpp"

namespace attndev::experiment {

std::string results_csv(const std::vector<io::Json>& rows);

io::Json results_document(const Config& config, const StoredResults& results,
                          const io::Provenance& writer);

std::string summary_markdown(const Config& config, const Plan& plan, const StoredResults& results,
                             const io::Provenance& writer);

// The tables would lose rows: they hold more than the JSONL files they are rebuilt from.
class TablesWouldShrink : public OutputDirError {
 public:
  using OutputDirError::OutputDirError;
};

// Rows in DIR's existing tables (the larger of results.json's "rows" and results.csv's records;
// 0 when neither exists or reads).
std::size_t table_rows(const std::filesystem::path& dir);

// Throws TablesWouldShrink when DIR's tables hold more rows than `rows`: results*.jsonl are the
// source of truth, and tables holding more than they do are the last copy of the missing rows.
void check_tables_not_shrinking(const std::filesystem::path& dir, std::size_t rows);

// Writes results.csv, results.json and summary.md into DIR, each atomically, after
// check_tables_not_shrinking.
void write_result_tables(const std::filesystem::path& dir, const Config& config, const Plan& plan,
                         const StoredResults& results, const io::Provenance& writer);

// "%.3g"-style text for tables; "nan"/"inf" for non-finite values.
std::string short_number(double value);

}  // namespace attndev::experiment
