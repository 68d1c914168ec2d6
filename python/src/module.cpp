// attndev._core: the C++ libraries as a Python extension module (nanobind). Every computation is a
// call into the libraries the CLI uses (docs/CONTRIBUTING.md #7: one measurement path):
//   attention  -> measure::round_inputs + experiment::run_variant   (what `attndev point` runs)
//   golden     -> measure::round_inputs + measure::golden_of
//   deviation  -> measure::deviation
//   match      -> experiment::default_policies / make_candidates / match_output (`attndev match`)
// This file only converts: arrays in, arrays and dicts out, argument errors to exceptions whose
// text is the CLI's message with the Python keyword in place of the flag. The Python package
// (python/attndev/__init__.py) normalises shapes and dtypes before calling here: every array
// arriving is float64, C-contiguous, (B, H, N, d).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "attention/problem.hpp"
#include "config/error.hpp"
#include "config/policy_json.hpp"
#include "config/suggest.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/match.hpp"
#include "experiment/run/variant_runner.hpp"
#include "io/json_depth.hpp"
#include "measure/measure.hpp"
#include "metrics/deviation.hpp"
#include "numerics/format.hpp"
#include "numerics/policy.hpp"
#include "mma.hpp"

namespace nb = nanobind;

namespace attndev::python {

void register_quantize(nb::module_& m);  // quantize.cpp

namespace {

// A bad argument: raised in Python as attndev.Error (a ValueError), the CLI's exit 2.
class ArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// (B, H, N, d), float64, C order: what __init__.py hands in.
using Array4 = nb::ndarray<const double, nb::ndim<4>, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, double, nb::ndim<4>>;

attention::Tensor to_tensor(const Array4& a) {
  for (std::size_t i = 0; i < 4; ++i)
    if (a.shape(i) > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw ArgumentError("an extent of " + std::to_string(a.shape(i)) +
                          " is larger than the emulator's tensors hold (int)");
  // The emulator's tensors own their storage (std::vector<double>): one O(N d) copy, against
  // O(N^2 d) for the attention itself. Filled by assign (one pass), not sized then copied (two:
  // the sized constructor zero-fills), as memory bandwidth is this call's whole cost.
  attention::Tensor t;
  t.batch = static_cast<int>(a.shape(0));
  t.heads = static_cast<int>(a.shape(1));
  t.rows = static_cast<int>(a.shape(2));
  t.cols = static_cast<int>(a.shape(3));
  t.data.assign(a.data(), a.data() + a.size());
  return t;
}

// The tensor's buffer handed to numpy without a copy: the vector moves into the capsule that owns
// it and frees it when the array dies.
OutArray to_array(attention::Tensor&& t) {
  auto* owned = new std::vector<double>(std::move(t.data));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const std::size_t shape[4] = {static_cast<std::size_t>(t.batch),
                                static_cast<std::size_t>(t.heads), static_cast<std::size_t>(t.rows),
                                static_cast<std::size_t>(t.cols)};
  return OutArray(owned->data(), 4, shape, owner);
}

attention::Inputs to_inputs(const Array4& q, const Array4& k, const Array4& v) {
  return {to_tensor(q), to_tensor(k), to_tensor(v)};
}

// A preset name or a JSON object text, as `attndev point --policy` reads it.
numerics::PrecisionPolicy parse_policy(const std::string& text, const char* keyword) {
  nlohmann::json value;
  if (text.find_first_not_of(' ') != std::string::npos &&
      text[text.find_first_not_of(' ')] == '{') {
    if (const auto deep = io::json_depth_error(text))
      throw ArgumentError(std::string(keyword) + ": the JSON is " + *deep);
    try {
      value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw ArgumentError(std::string(keyword) + ": not valid JSON (" + e.what() + ")");
    }
  } else {
    value = text;
  }
  numerics::PrecisionPolicy policy;
  std::string error;
  if (!config::parse_policy(value, policy, error))
    throw ArgumentError(std::string(keyword) + ": " + error);
  return policy;
}

numerics::Format parse_format(const std::string& text, const char* keyword) {
  numerics::Format f;
  if (numerics::parse_format(text, f)) return f;
  std::vector<std::string_view> names;
  for (numerics::Format g : numerics::kAllFormats) names.push_back(numerics::format_name(g));
  throw ArgumentError(std::string(keyword) + ": unknown format \"" + text + "\"" +
                      config::did_you_mean(text, names) + "; valid: " + config::join_names(names));
}

attention::ScalePlacement parse_scale_on(const std::string& text) {
  if (text == "scores") return attention::ScalePlacement::scores;
  if (text == "query") return attention::ScalePlacement::query;
  constexpr std::string_view kPlacements[] = {"scores", "query"};
  throw ArgumentError("scale_on: unknown placement \"" + text + "\"" +
                      config::did_you_mean(text, kPlacements) + "; valid: scores, query");
}

void require_at_least(long long value, long long minimum, const char* keyword) {
  if (value < minimum)
    throw ArgumentError(std::string(keyword) + " must be >= " + std::to_string(minimum) + ", got " +
                        std::to_string(value));
}

// `attndev match --algo`'s parse and message.
attention::Algorithm parse_algorithm(const std::string& text, const char* keyword) {
  attention::Algorithm a;
  if (attention::parse_algorithm(text, a)) return a;
  std::vector<std::string_view> names;
  for (attention::Algorithm b : attention::kEveryAlgorithm)
    names.push_back(attention::algorithm_name(b));
  throw ArgumentError(std::string(keyword) + ": unknown algorithm \"" + text + "\"" +
                      config::did_you_mean(text, names) + "; valid: " + config::join_names(names));
}

// The variant as `attndev point` builds it (variant_from_flags): through the config parser, so
// that the same algorithms and backends are accepted with the same messages.
experiment::Variant make_variant(const std::string& algo, const numerics::PrecisionPolicy& policy,
                                 const std::string& backend) {
  const nlohmann::json v = {
      {"algorithm", algo}, {"policy", config::policy_to_json(policy)}, {"backend", backend}};
  try {
    return experiment::parse_variant(v, "");
  } catch (const config::ConfigError& e) {
    const std::string keyword = e.path() == "algorithm" ? "algo" : e.path();
    throw ArgumentError(keyword + ": " + e.message());
  }
}

attention::Options make_options(bool causal, const std::string& scale_on,
                                std::optional<double> scale, int block_r, int block_c,
                                int threads) {
  require_at_least(block_r, 1, "block[0] (Br)");
  require_at_least(block_c, 1, "block[1] (Bc)");
  require_at_least(threads, 0, "threads");
  attention::Options o;
  o.causal = causal;
  o.scale_placement = parse_scale_on(scale_on);
  o.scale = scale;
  o.block_r = block_r;
  o.block_c = block_c;
  o.threads = threads;
  return o;
}

// The emulator's checks (shapes, tiles, a non-finite scale) before anything runs: they name the
// field, and coming from arguments they are argument errors, as in `attndev point`.
void check_arguments(const attention::Inputs& inputs, const attention::Options& options) {
  try {
    attention::validate(inputs, options);
  } catch (const std::invalid_argument& e) {
    throw ArgumentError(e.what());
  }
}

// O and the seconds the kernel alone took (run_variant's clock): the rest of the call is the
// package's own cost, which docs/python.md's speed figures measure.
std::pair<OutArray, double> attention_call(const Array4& q, const Array4& k, const Array4& v,
                                           const std::string& algo, const std::string& policy_text,
                                           int block_r, int block_c, bool causal,
                                           const std::string& scale_on, std::optional<double> scale,
                                           int threads, const std::string& backend) {
  const numerics::PrecisionPolicy policy = parse_policy(policy_text, "policy");
  const experiment::Variant variant = make_variant(algo, policy, backend);
  const attention::Options options =
      make_options(causal, scale_on, scale, block_r, block_c, threads);
  attention::Inputs inputs = to_inputs(q, k, v);
  experiment::VariantOutcome r;
  {
    nb::gil_scoped_release release;  // minutes of C++ work: let other Python threads run
    // `attndev point --inputs`: rounded once to the variant's input format, then the variant.
    inputs = measure::round_inputs(inputs, policy.input);
    check_arguments(inputs, options);
    r = experiment::run_variant(variant, inputs, options);
  }
  if (!r.status.is_ok()) throw std::runtime_error(variant.name + ": " + r.status.text());
  return {to_array(std::move(r.output.o)), r.runtime_ms / 1e3};
}

attention::Inputs rounded_inputs(const Array4& q, const Array4& k, const Array4& v,
                                 const std::optional<std::string>& input_format) {
  attention::Inputs inputs = to_inputs(q, k, v);
  if (input_format)
    inputs = measure::round_inputs(inputs, parse_format(*input_format, "input_format"));
  return inputs;
}

OutArray golden_call(const Array4& q, const Array4& k, const Array4& v, bool causal,
                     const std::string& scale_on, std::optional<double> scale,
                     const std::optional<std::string>& input_format, int threads) {
  const attention::Options options = make_options(causal, scale_on, scale, 64, 64, threads);
  attention::Inputs inputs = rounded_inputs(q, k, v, input_format);
  measure::Golden g;
  {
    nb::gil_scoped_release release;
    check_arguments(inputs, options);
    g = measure::golden_of(inputs, options);
  }
  return to_array(std::move(g.output.o));
}

nb::dict deviation_dict(const metrics::Deviation& d) {
  nb::dict out;
  out["max_abs"] = d.max_abs;
  out["mean_abs"] = d.mean_abs;
  out["std_abs"] = d.std_abs;
  out["rmse"] = d.rmse;
  out["rel_l2"] = d.rel_l2;
  out["rel_l1"] = d.rel_l1;
  out["max_rel"] = d.max_rel;
  out["max_rel_floor"] = d.max_rel_floor;
  out["cos_sim"] = d.cos_sim;
  out["nan_count"] = d.nan_count;
  out["inf_count"] = d.inf_count;
  out["worst_index"] = d.worst_index;
  out["count"] = d.count;
  return out;
}

using Flat = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

nb::dict deviation_call(const Flat& output, const Flat& reference, const std::string& format) {
  const numerics::Format f = parse_format(format, "format");
  if (output.size() != reference.size())
    throw ArgumentError("deviation: output has " + std::to_string(output.size()) +
                        " elements, golden " + std::to_string(reference.size()));
  const std::span<const double> out(output.data(), output.size());
  const std::span<const double> ref(reference.data(), reference.size());
  const metrics::Deviation d = measure::deviation(out, ref, measure::max_abs_finite(ref), f);
  return deviation_dict(d);
}

std::vector<int> clamp_tiles(const std::vector<int>& sizes, int n, const char* keyword) {
  // `attndev match`'s rule: a tile longer than the sequence is one tile of the sequence's length.
  std::vector<int> out;
  for (int s : sizes) {
    require_at_least(s, 1, keyword);
    const int t = std::min(s, n);
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

nb::dict match_row(const experiment::MatchResult& m) {
  const experiment::Variant& v = m.candidate.variant;
  nb::dict r;
  r["candidate"] = v.name;
  r["algorithm"] = attention::algorithm_name(v.algorithm);
  r["policy"] = config::policy_to_json(v.policy).dump();
  r["policy_label"] = v.policy_label;
  r["status"] = m.status.text();
  r["block_r"] = v.block_r ? nb::cast(*v.block_r) : nb::none();
  r["block_c"] = v.block_c ? nb::cast(*v.block_c) : nb::none();
  if (m.status.is_ok()) {
    r["identical_fraction"] = m.ulps.identical_fraction;
    r["max_ulp"] = m.ulps.max_ulp;
    r["mean_ulp"] = m.ulps.mean_ulp;
    r["ulp_histogram"] = m.ulps.histogram_text();
    r["diff_max_abs"] = m.difference.max_abs;
    r["diff_max_ulps_at_max"] = m.max_diff_ulps_at_max;
    r["diff_mean_abs"] = m.difference.mean_abs;
    r["candidate_mean_abs"] = m.candidate_dev.mean_abs;
    r["output_mean_abs"] = m.output_dev.mean_abs;
  }
  return r;
}

nb::dict match_call(const Array4& output, const Array4& q, const Array4& k, const Array4& v,
                    const std::vector<std::string>& algos, const std::vector<std::string>& policies,
                    const std::vector<int>& block_r, const std::vector<int>& block_c, bool causal,
                    const std::string& scale_on, int threads) {
  std::vector<attention::Algorithm> algorithms;
  for (const std::string& a : algos) algorithms.push_back(parse_algorithm(a, "algos"));
  const attention::Inputs inputs = to_inputs(q, k, v);
  const attention::Tensor o = to_tensor(output);
  if (o.batch != inputs.q.batch || o.heads != inputs.q.heads || o.rows != inputs.q.rows ||
      o.cols != inputs.q.cols)
    throw ArgumentError("match: the output must have q's shape");
  std::vector<numerics::PrecisionPolicy> pols;
  for (const std::string& p : policies) pols.push_back(parse_policy(p, "policies"));
  if (pols.empty()) pols = experiment::default_policies(o);
  if (pols.empty())
    throw ArgumentError(
        "the output holds values no bf16/fp16/fp32/fp64 policy stores; name "
        "candidate policies with policies=");
  experiment::MatchOptions mo;
  mo.options = make_options(causal, scale_on, std::nullopt, 64, 64, threads);
  check_arguments(inputs, mo.options);
  const auto candidates =
      experiment::make_candidates(algorithms, pols, clamp_tiles(block_r, inputs.q.rows, "block_r"),
                                  clamp_tiles(block_c, inputs.k.rows, "block_c"));
  std::vector<experiment::MatchResult> ranked;
  {
    nb::gil_scoped_release release;
    ranked = experiment::match_output(o, inputs, candidates, mo);
  }
  nb::list rows;
  for (const experiment::MatchResult& m : ranked) rows.append(match_row(m));
  std::string holding;
  for (numerics::Format f : experiment::formats_holding(o))
    holding += (holding.empty() ? "" : ", ") + std::string(numerics::format_name(f));
  nb::dict out;
  out["verdict"] = experiment::match_verdict(ranked);
  out["formats_holding_output"] = holding;
  out["candidates"] = rows;
  return out;
}

nb::list presets_list() {
  nb::list out;
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets) {
    nb::dict d;
    d["name"] = std::string(p.name);
    d["description"] = std::string(p.description);
    d["stages"] = config::policy_stages_json(p.policy).dump();
    out.append(d);
  }
  return out;
}

nb::list algorithms_list() {
  nb::list out;
  for (attention::Algorithm a : attention::kEveryAlgorithm) {
    nb::dict d;
    d["name"] = attention::algorithm_name(a);
    d["description"] = attention::algorithm_description(a);
    out.append(d);
  }
  return out;
}

// The policy's output format (the max_rel floor of its deviation) and input format.
nb::dict policy_formats(const std::string& policy_text) {
  const numerics::PrecisionPolicy p = parse_policy(policy_text, "policy");
  nb::dict d;
  d["input"] = numerics::format_name(p.input);
  d["output"] = numerics::format_name(p.output);
  d["label"] = config::policy_label(p);
  return d;
}

}  // namespace

}  // namespace attndev::python

NB_MODULE(_core, m) {
  using namespace attndev::python;
  m.doc() = "attndev's C++ libraries (use the attndev package, not this module)";
  nb::exception<ArgumentError>(m, "Error", PyExc_ValueError);
  m.def("attention", &attention_call, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("algo"),
        nb::arg("policy"), nb::arg("block_r"), nb::arg("block_c"), nb::arg("causal"),
        nb::arg("scale_on"), nb::arg("scale").none(), nb::arg("threads"), nb::arg("backend"));
  m.def("golden", &golden_call, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("causal"),
        nb::arg("scale_on"), nb::arg("scale").none(), nb::arg("input_format").none(),
        nb::arg("threads"));
  m.def("deviation", &deviation_call, nb::arg("output"), nb::arg("golden"), nb::arg("format"));
  m.def("match", &match_call, nb::arg("output"), nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("algos"), nb::arg("policies"), nb::arg("block_r"), nb::arg("block_c"),
        nb::arg("causal"), nb::arg("scale_on"), nb::arg("threads"));
  m.def("presets", &presets_list);
  m.def("algorithms", &algorithms_list);
  m.def("policy_formats", &policy_formats, nb::arg("policy"));
  register_quantize(m);
  register_mma(m);
}
