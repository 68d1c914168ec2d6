// Helpers shared by the subcommands: argument validation that fails with a UsageError (exit 2)
// naming the flag and the fix, non-finite-safe number printing, a plain-text table, provenance.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "commands.hpp"
#include "experiment/spec/inputs.hpp"
#include "io/json_strict.hpp"
#include "io/provenance.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "numerics/format.hpp"
#include "version.hpp"

namespace attndev::app {

// "1.234e-05", or "nan" / "inf" / "-inf": never printf's platform-dependent spellings.
inline std::string format_number(double x, int digits = 3) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, x);
  return buf;
}

// A JSON number, or the strings "nan" / "inf" / "-inf" (results never carry null).
inline nlohmann::json json_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

inline void require_at_least(long long value, long long minimum, std::string_view flag) {
  if (value < minimum)
    throw UsageError(std::string(flag) + " must be >= " + std::to_string(minimum) + ", got " +
                     std::to_string(value));
}

inline std::vector<std::string_view> algorithm_names() {
  std::vector<std::string_view> names;
  for (attention::Algorithm a : attention::kEveryAlgorithm)
    names.push_back(attention::algorithm_name(a));
  return names;
}

inline attention::Algorithm parse_algorithm_arg(std::string_view text, std::string_view flag) {
  attention::Algorithm a;
  if (attention::parse_algorithm(text, a)) return a;
  const auto names = algorithm_names();
  throw UsageError(std::string(flag) + ": unknown algorithm \"" + std::string(text) + "\"" +
                   config::did_you_mean(text, names) + "; valid: " + config::join_names(names) +
                   " (see `attndev list algorithms`)");
}

// A preset name ("kernel-bf16") or a JSON object ('{"base":"kernel-bf16","prob":"fp32"}').
inline numerics::PrecisionPolicy parse_policy_arg(std::string_view text, std::string_view flag) {
  nlohmann::json value;
  std::string_view trimmed = text;
  while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
  if (!trimmed.empty() && trimmed.front() == '{') {
    if (const auto deep = io::json_text_error(trimmed))
      throw UsageError(std::string(flag) + ": the JSON is " + *deep);
    try {
      value = nlohmann::json::parse(trimmed);
    } catch (const nlohmann::json::parse_error& e) {
      throw UsageError(std::string(flag) + ": not valid JSON (" + e.what() +
                       "); write a preset name or an object such as "
                       "'{\"base\":\"kernel-bf16\",\"prob\":\"fp32\"}'");
    }
  } else {
    value = std::string(text);
  }
  numerics::PrecisionPolicy policy;
  std::string error;
  if (!config::parse_policy(value, policy, error))
    throw UsageError(std::string(flag) + ": " + error);
  return policy;
}

inline experiment::Distribution parse_distribution_arg(std::string_view text,
                                                       std::string_view flag) {
  experiment::Distribution d;
  std::string error;
  if (!experiment::parse_distribution(text, d, error))
    throw UsageError(std::string(flag) + ": " + error);
  return d;
}

// config_warnings of a valid config, one "warning:" line each on stderr (stdout keeps the result).
inline void print_config_warnings(const std::string& config_path,
                                  const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings)
    std::fprintf(stderr, "attndev: warning: %s: %s\n", config_path.c_str(), w.c_str());
}

// Every field of io::collect_provenance(), the one builder, for --json outputs.
inline nlohmann::json provenance_json() {
  return nlohmann::json(io::to_json(io::collect_provenance()));
}

// Columns padded to their widest cell; the first column left-aligned (labels), others right
// (numbers line up on their last digit).
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void print(std::FILE* out, bool left_align_all = false) const {
    std::vector<std::size_t> width;
    for (const auto& row : rows_) {
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      std::string line;
      for (std::size_t c = 0; c < rows_[r].size(); ++c) {
        const std::string& cell = rows_[r][c];
        const std::string pad(width[c] - cell.size(), ' ');
        const bool last = c + 1 == rows_[r].size();
        if (c == 0 || left_align_all)
          line += cell + (last ? "" : pad);
        else
          line += pad + cell;
        if (!last) line += "  ";
      }
      std::fprintf(out, "%s\n", line.c_str());
      if (r == 0) {
        std::size_t total = 0;
        for (std::size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? 2 : 0);
        std::fprintf(out, "%s\n", std::string(total, '-').c_str());
      }
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace attndev::app
