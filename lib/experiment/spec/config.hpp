// Experiment configs: JSON text -> validated, typed Config (docs/configs.md is the reference).
//
// Every error is a ConfigError naming the JSON path of the offending value (`axes.block_c[2]`,
// `variants[1].policy`, or `-a seq_len` for a command-line override) and what would fix it.
// Nothing here runs anything; the plan (plan.hpp) expands a Config into points.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "config/error.hpp"
#include "experiment/spec/axes.hpp"
#include "experiment/spec/stage.hpp"
#include "numerics/policy.hpp"

namespace attndev::experiment {

// Configs throw config::ConfigError (lib/config), the error type of every JSON config.
using config::ConfigError;

// The axes a config may sweep, in canonical order. Plans iterate with the last axis fastest, so
// tile sizes (which only flash variants depend on) vary innermost, next to points sharing inputs.
// `inputs` (Q, K, V from files) comes first: with it, the shape axes come from each file.
inline constexpr std::string_view kAxisNames[] = {
    "inputs",       "batch",  "heads",           "seq_len", "seq_len_kv", "head_dim",
    "distribution", "causal", "scale_placement", "block_r", "block_c"};
// Axes of the variants rather than of the points: each value makes one copy of every variant that
// names it as a placeholder (`"policy": "kernel-{format}"`, `"name": "flash2-{format}"`,
// `"stage": "{stage}"`). They
// leave points (and so point ids) alone: a variant's policy never entered a point's id.
inline constexpr std::string_view kVariantAxisNames[] = {"format", "policy", "stage"};
// Axes an `inputs` file decides; a config with `inputs` may not set them.
inline constexpr std::string_view kFileShapeAxes[] = {"batch",      "heads",    "seq_len",
                                                      "seq_len_kv", "head_dim", "distribution"};

// Metric columns of every row; `metrics` in a config picks which appear in summary tables.
inline constexpr std::string_view kDeviationMetrics[] = {
    "max_abs", "mean_abs", "std_abs", "rmse",      "rel_l2",
    "rel_l1",  "max_rel",  "cos_sim", "nan_count", "inf_count"};
// Columns of a quantized recipe's row (attention::QuantStageReport): per quantized stage (q, k,
// v, p) the share of saturated elements and the stage's own relative RMS quantization error,
// and the zero and non-finite scales of all stages.
inline constexpr std::string_view kQuantColumns[] = {
    "saturated_q", "saturated_k", "saturated_v", "saturated_p", "quant_err_q",
    "quant_err_k", "quant_err_v", "quant_err_p", "zero_scales", "nonfinite_scales"};
// Metrics that also get a ratio_<name> column (variant / its baseline on the same point).
inline constexpr std::string_view kRatioMetrics[] = {"max_abs", "mean_abs", "std_abs", "rmse",
                                                     "rel_l2",  "rel_l1",   "max_rel"};
// Columns of a row whose variant has a reference variant (`reference`): the difference of the
// two outputs and how many elements are bit-identical / how many ulps apart (output format).
inline constexpr std::string_view kReferenceColumns[] = {
    "reference", "ref_max_abs", "ref_mean_abs", "identical_fraction",
    "max_ulp",   "mean_ulp",    "ulp_histogram"};
inline constexpr std::string_view kSelectableMetrics[] = {"max_abs",
                                                          "mean_abs",
                                                          "std_abs",
                                                          "rmse",
                                                          "rel_l2",
                                                          "rel_l1",
                                                          "max_rel",
                                                          "cos_sim",
                                                          "nan_count",
                                                          "inf_count",
                                                          "runtime_ms",
                                                          "ratio_max_abs",
                                                          "ratio_mean_abs",
                                                          "ratio_std_abs",
                                                          "ratio_rmse",
                                                          "ratio_rel_l2",
                                                          "ratio_rel_l1",
                                                          "ratio_max_rel",
                                                          "saturated_q",
                                                          "saturated_k",
                                                          "saturated_v",
                                                          "saturated_p",
                                                          "quant_err_q",
                                                          "quant_err_k",
                                                          "quant_err_v",
                                                          "quant_err_p",
                                                          "ref_max_abs",
                                                          "ref_mean_abs",
                                                          "identical_fraction",
                                                          "max_ulp",
                                                          "mean_ulp"};

// cpu: the emulator; cuda: lib/cuda's kernels; external: a command run per point (below).
enum class Backend : unsigned char { cpu, cuda, external };
const char* backend_name(Backend b);

// The tensor-core FA-2 kernel of lib/cuda: `"algorithm": "flash2-tc"` with `"backend": "cuda"`.
inline constexpr std::string_view kTensorCoreKernel = "flash2-tc";
// `reference` naming the FP64 golden (the default) rather than a variant.
inline constexpr std::string_view kGoldenReference = "golden";

// The longest variant name: its dump file name (each byte up to 3, io::file_name_encode) and
// ".safetensors" fit in the 255 bytes of a file name.
inline constexpr std::size_t kMaxVariantNameBytes = 80;

struct Variant {
  std::string name;  // printable characters, no backslash, at most kMaxVariantNameBytes
  attention::Algorithm algorithm = attention::Algorithm::flash2;
  // Which implementation of `algorithm` the backend runs: empty for the backend's own (the
  // emulator; lib/cuda's kernel_for), "flash2-tc" for the tensor-core kernel.
  std::string kernel;
  numerics::PrecisionPolicy policy;
  std::string policy_label;
  // `"stage"` (experiment/spec/stage.hpp): `policy` is `base_policy` changed as `stage` says;
  // without the key, no stage and base_policy == policy.
  std::optional<StageSpec> stage;
  numerics::PrecisionPolicy base_policy;
  std::string base_policy_label;
  Backend backend = Backend::cpu;
  bool baseline = false;  // the default reference of ratio_* columns
  // Name of the variant this one's ratios divide by; empty: the `baseline: true` variant (if
  // any). Lets one config hold a baseline per precision (flash2-bf16 vs baseline-bf16, ...).
  std::string ratio_to;
  // Tiles this variant always runs with, whatever the point's block_r/block_c (e.g. a real
  // kernel's fixed split sizes); the row records the tiles used. Both set: tile-independent.
  std::optional<int> block_r, block_c;
  // Name of the variant this one's output is compared with element by element (identical
  // fraction, ulps, |O - O_ref|); empty: the config's `reference`; "golden": none.
  std::string reference;
  // backend == external: an implementation outside attndev, run as a command per point. Q, K, V
  // (rounded to the policy's input format) go to {inputs}, O comes back from {output}.
  struct External {
    std::string command;  // with {inputs}, {output}, {format} and {<axis>} placeholders
    double timeout_s = 600;
    bool tile_dependent = false;  // the command names {block_r} or {block_c}; a worker: `tiles`
    // `"external": {"worker": COMMAND}`: the command starts one long-lived process per run that is
    // sent one point at a time (experiment/run/external_worker.hpp), not one process per point.
    bool worker = false;
    // A worker's start (interpreter, `import torch`, CUDA initialisation) may take far longer than
    // a point: bounded apart, by `start_timeout` (default: `timeout`, at least 60 s).
    double start_timeout_s = 600;
    // `"env": {"PYTHON": "/opt/venv/bin/python3"}`: variables set for the command (or worker),
    // which it reads as $PYTHON. The environment, not the implementation: not in the variant's
    // key, so fixing an interpreter's path keeps the rows (as the SLURM `setup` key does).
    std::vector<std::pair<std::string, std::string>> env;
  };
  std::optional<External> external;
};

// "flash2", "flash2-tc", "external": the algorithm column of a row.
std::string variant_algorithm_name(const Variant& variant);

struct AxisValues {
  std::string name;
  std::vector<AxisValue> values;  // typed once, here (experiment/spec/axes.hpp)
  std::string path;  // where the values came from, for messages (`axes.seq_len`, `-a seq_len`)
};

enum class CompareOp : unsigned char { lt, le, gt, ge, eq, ne };
// a OP b: the one comparison of constraints, for the parser's always-false check and the plan.
bool compare(long long a, CompareOp op, long long b);

struct Constraint {
  std::string text;      // as written, e.g. "block_r <= seq_len"
  std::string reason;    // shown for skipped points; defaults to "violates <text>"
  std::string lhs, rhs;  // axis names, or empty when the operand is the literal
  long long lhs_literal = 0, rhs_literal = 0;
  CompareOp op = CompareOp::le;
};

struct Config {
  // The default `reference` of every variant: "golden" (none) or a variant's name.
  std::string reference = std::string(kGoldenReference);
  std::string name;
  std::string description;
  std::vector<AxisValues> axes;  // every axis of kAxisNames, defaults filled in
  // kVariantAxisNames given in `axes`, with their values (already expanded into `variants`).
  std::vector<std::pair<std::string, std::vector<std::string>>> variant_axes;
  std::vector<std::vector<std::string>> zip;  // groups of axes that move together
  std::vector<Constraint> constraints;
  std::vector<std::uint64_t> seeds;  // one trial per seed
  std::vector<Variant> variants;
  std::vector<std::string> metrics;  // shown in summary tables
  // Write every point's rounded Q, K, V, golden O and variant outputs (safetensors) under
  // DIR/dump/ (experiment/run/dump.hpp).
  bool dump = false;
  // Where the run's own work runs (`"backend"`, `--backend`): cpu, or cuda for the inputs, the
  // golden and every cpu (emulated) variant on the device (experiment/run/device_backend.hpp).
  // Variants with their own backend (cuda kernels, external commands) run where they say.
  Backend backend = Backend::cpu;
  nlohmann::json effective;  // the config after overrides, canonical (sorted keys)
  std::string hash;          // config_hash(effective)
  // What determines the points and their inputs: config_hash without the variants (and the
  // variant axes). Rows of one folder share it; editing a variant keeps it (docs/results.md).
  std::string points_hash;
  // Per variant (same order as `variants`): a hash of what determines that variant's numbers
  // at a point: its algorithm, kernel, policy stages, backend, tiles, external command and
  // exchange format, and the keys of the variants its ratio_* and ref_* columns are taken
  // against. Its name, timeout and `env` are not in it. A row carries the key it was made with;
  // a row whose key is not its variant's current one is recomputed.
  std::vector<std::string> variant_keys;

  const AxisValues& axis(std::string_view name) const;
  // Index into `variants` of the variant whose metrics v's ratios divide by, or -1.
  int ratio_reference(std::size_t v) const;
  // Index of the variant whose output v is compared with element by element, or -1 (golden).
  int output_reference(std::size_t v) const;
};

// The hash that names a config's results: over `effective` without the keys that cannot change
// a row's numbers (`description`, `metrics`, `dump`, "_" comments), so editing those keeps the
// results folder usable; every other key is in it.
std::string config_hash(const nlohmann::json& effective);
// The points part of config_hash: without `variants` and the variant axes (axes.format,
// axes.policy), whose changes only change variants.
std::string points_hash(const nlohmann::json& effective);

// The hash attndev wrote before presentation keys left it (over the whole effective config):
// recognizes an older results folder to say so, never to accept it.
std::string legacy_config_hash(const nlohmann::json& effective);
// Things a valid config probably did not mean, one sentence each with the variant's name and the
// fix: today a variant whose ratio reference rounds its inputs to another format (its ratio then
// divides errors measured on different inputs). `attndev validate` and `plan` print them.
std::vector<std::string> config_warnings(const Config& config);

// Parses and validates a config. `overrides` are `-a` strings such as "seq_len=[512,1024]" or
// "block_c=64" (a scalar is a one-value list; a value that is not JSON is taken as a string).
// Throws ConfigError.
Config parse_config(std::string_view text, std::span<const std::string> overrides = {});

// The variant of an algorithm name, a policy and a backend name, built through parse_variant so
// that `attndev point`, the Python module and a config accept the same algorithms (flash2-tc
// included) and backends with the same messages. Throws ConfigError whose path() is "algorithm",
// "policy" or "backend" (each caller names its own flag or keyword).
Variant variant_from_parts(const std::string& algorithm, const numerics::PrecisionPolicy& policy,
                           const std::string& backend);

// One variant object (also what `attndev point` builds from its flags). `path` prefixes error
// paths ("variants[2]"). Cross-variant checks (names, ratio_to, reference) are parse_config's.
Variant parse_variant(const nlohmann::json& value, const std::string& path);

}  // namespace attndev::experiment
