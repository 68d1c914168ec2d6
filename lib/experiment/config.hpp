// Experiment configs: JSON text -> validated, typed Config (docs/configs.md is the reference).
//
// Every error is a ConfigError naming the JSON path of the offending value (`axes.block_c[2]`,
// `variants[1].policy`, or `-a seq_len` for a command-line override) and what would fix it.
// Nothing here runs anything; the plan (plan.hpp) expands a Config into points.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "config/error.hpp"
#include "numerics/policy.hpp"

namespace attndev::experiment {

// Configs throw config::ConfigError (lib/config), the error type of every JSON config.
using config::ConfigError;

// The axes a config may sweep, in canonical order. Plans iterate with the last axis fastest, so
// tile sizes (which only flash variants depend on) vary innermost, next to points sharing inputs.
inline constexpr std::string_view kAxisNames[] = {
    "batch",        "heads",  "seq_len",         "seq_len_kv", "head_dim",
    "distribution", "causal", "scale_placement", "block_r",    "block_c"};

// Metric columns of every row; `metrics` in a config picks which appear in summary tables.
inline constexpr std::string_view kDeviationMetrics[] = {"max_abs", "mean_abs",  "std_abs",
                                                         "rmse",    "rel_l2",    "max_rel",
                                                         "cos_sim", "nan_count", "inf_count"};
// Metrics that also get a ratio_<name> column (variant / its baseline on the same point).
inline constexpr std::string_view kRatioMetrics[] = {"max_abs", "mean_abs", "std_abs",
                                                     "rmse",    "rel_l2",   "max_rel"};
inline constexpr std::string_view kSelectableMetrics[] = {
    "max_abs",       "mean_abs",   "std_abs",       "rmse",
    "rel_l2",        "max_rel",    "cos_sim",       "nan_count",
    "inf_count",     "runtime_ms", "ratio_max_abs", "ratio_mean_abs",
    "ratio_std_abs", "ratio_rmse", "ratio_rel_l2",  "ratio_max_rel"};

enum class Backend : unsigned char { cpu, cuda };
const char* backend_name(Backend b);

struct Variant {
  std::string name;
  attention::Algorithm algorithm = attention::Algorithm::flash2;
  numerics::PrecisionPolicy policy;
  std::string policy_label;
  Backend backend = Backend::cpu;
  bool baseline = false;  // the default reference of ratio_* columns
  // Name of the variant this one's ratios divide by; empty: the `baseline: true` variant (if
  // any). Lets one config hold a baseline per precision (flash2-bf16 vs baseline-bf16, ...).
  std::string ratio_to;
};

struct AxisValues {
  std::string name;
  // Canonical JSON values: integers, booleans, canonical strings ("normal(0,1)", "scores"), and
  // for seq_len_kv the string "seq_len" meaning "equal to seq_len".
  std::vector<nlohmann::json> values;
  std::string path;  // where the values came from, for messages (`axes.seq_len`, `-a seq_len`)
};

enum class CompareOp : unsigned char { lt, le, gt, ge, eq, ne };

struct Constraint {
  std::string text;      // as written, e.g. "block_r <= seq_len"
  std::string reason;    // shown for skipped points; defaults to "violates <text>"
  std::string lhs, rhs;  // axis names, or empty when the operand is the literal
  long long lhs_literal = 0, rhs_literal = 0;
  CompareOp op = CompareOp::le;
};

struct Config {
  std::string name;
  std::string description;
  std::vector<AxisValues> axes;               // every axis of kAxisNames, defaults filled in
  std::vector<std::vector<std::string>> zip;  // groups of axes that move together
  std::vector<Constraint> constraints;
  std::vector<std::uint64_t> seeds;  // one trial per seed
  std::vector<Variant> variants;
  std::vector<std::string> metrics;  // shown in summary tables
  nlohmann::json effective;          // the config after overrides, canonical (sorted keys)
  std::string hash;                  // stable_hash_hex(effective.dump())

  const AxisValues& axis(std::string_view name) const;
  // Index into `variants` of the variant whose metrics v's ratios divide by, or -1.
  int ratio_reference(std::size_t v) const;
};

// Parses and validates a config. `overrides` are `-a` strings such as "seq_len=[512,1024]" or
// "block_c=64" (a scalar is a one-value list; a value that is not JSON is taken as a string).
// Throws ConfigError.
Config parse_config(std::string_view text, std::span<const std::string> overrides = {});

// Reads the file first; a missing or unreadable file is a ConfigError with the file as path.
Config load_config_file(const std::string& path, std::span<const std::string> overrides = {});

}  // namespace attndev::experiment
