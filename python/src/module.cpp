// attndev._core: the C++ libraries as a Python extension module (nanobind). Every computation is a
// call into the libraries the CLI uses (docs/CONTRIBUTING.md #7: one measurement path):
//   attention  -> measure::round_inputs + experiment::run_variant   (what `attndev point` runs)
//   golden     -> measure::round_inputs + measure::golden_of
//   deviation  -> measure::deviation
//   match      -> experiment::default_policies / search_candidates / match_output (`attndev match`)
//   tools.hpp: round, inputs, safetensors read and write, did_you_mean
// attention's and golden's mask is attention::Options::mask (attention/mask.hpp); every long call
// runs through interruptible (common.hpp), so Ctrl-C stops it within one work item.
// This file only converts: arrays in, arrays and dicts out, argument errors to exceptions whose
// text is the CLI's message with the Python keyword in place of the flag. The Python package
// (python/attndev/__init__.py) normalises shapes and dtypes before calling here: every array
// arriving is float64, C-contiguous, (B, H, N, d).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
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
#include "measure/measure.hpp"
#include "metrics/deviation.hpp"
#include "numerics/format.hpp"
#include "numerics/policy.hpp"
#include "common.hpp"
#include "mma.hpp"
#include "tools.hpp"

namespace attndev::python {

void register_quantize(nb::module_& m);  // quantize.cpp

namespace {

// The variant as `attndev point` builds it: experiment::variant_from_parts, so that the same
// algorithms and backends are accepted with the same messages (the keyword in place of the flag).
experiment::Variant make_variant(const std::string& algo, const numerics::PrecisionPolicy& policy,
                                 const std::string& backend) {
  try {
    return experiment::variant_from_parts(algo, policy, backend);
  } catch (const config::ConfigError& e) {
    const std::string keyword = e.path() == "algorithm" ? "algo" : e.path();
    throw ArgumentError(keyword + ": " + e.message());
  }
}

// O and the seconds the kernel alone took (run_variant's clock): the rest of the call is the
// package's own cost, which docs/python.md's speed figures measure.
std::pair<OutArray, double> attention_call(const Array4& q, const Array4& k, const Array4& v,
                                           const std::string& algo, const std::string& policy_text,
                                           int block_r, int block_c, bool causal,
                                           const std::string& scale_on, std::optional<double> scale,
                                           int threads, const std::string& backend,
                                           const std::optional<Array4>& mask) {
  const numerics::PrecisionPolicy policy = parse_policy(policy_text, "policy");
  const experiment::Variant variant = make_variant(algo, policy, backend);
  attention::Options options = make_options(causal, scale_on, scale, block_r, block_c, threads);
  options.mask = to_mask(mask);
  attention::Inputs inputs = to_inputs(q, k, v);
  check_arguments(inputs, options);
  experiment::VariantOutcome r = interruptible([&] {
    // `attndev point --inputs`: rounded once to the variant's input format, then the variant.
    return experiment::run_variant(variant, measure::round_inputs(inputs, policy.input), options);
  });
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
                     const std::optional<std::string>& input_format, int threads,
                     const std::optional<Array4>& mask) {
  attention::Options options = make_options(causal, scale_on, scale, 64, 64, threads);
  options.mask = to_mask(mask);
  const attention::Inputs inputs = rounded_inputs(q, k, v, input_format);
  check_arguments(inputs, options);
  measure::Golden g = interruptible([&] { return measure::golden_of(inputs, options); });
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
  // The CLI's default search: the twins of the GPU kernels under every default profile too.
  const auto candidates = experiment::search_candidates(
      algorithms, pols, clamp_tiles(block_r, inputs.q.rows, "block_r"),
      clamp_tiles(block_c, inputs.k.rows, "block_c"), experiment::default_twin_algorithms(),
      experiment::default_twin_profiles());
  const std::vector<experiment::MatchResult> ranked =
      interruptible([&] { return experiment::match_output(o, inputs, candidates, mo); });
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
  static nb::exception<ArgumentError> error(m, "Error", PyExc_ValueError);
  // Registered after nanobind's own translators, so tried first: every message that leaves the
  // module is short whatever the input was (short_message).
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* type) {
        try {
          std::rethrow_exception(p);
        } catch (const ArgumentError& e) {
          PyErr_SetString(static_cast<PyObject*>(type), short_message(e.what()).c_str());
        } catch (const nb::python_error&) {
          throw;  // a Python exception on its way back (KeyboardInterrupt): restored as it is
        } catch (const nb::builtin_exception&) {
          throw;  // nanobind's own (TypeError, ...): its translator maps them
        } catch (const std::bad_alloc&) {
          throw;  // MemoryError, by nanobind's translator
        } catch (const std::exception& e) {
          PyErr_SetString(PyExc_RuntimeError, short_message(e.what()).c_str());
        }
      },
      error.ptr());
  m.def("attention", &attention_call, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("algo"),
        nb::arg("policy"), nb::arg("block_r"), nb::arg("block_c"), nb::arg("causal"),
        nb::arg("scale_on"), nb::arg("scale").none(), nb::arg("threads"), nb::arg("backend"),
        nb::arg("mask").none());
  m.def("golden", &golden_call, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("causal"),
        nb::arg("scale_on"), nb::arg("scale").none(), nb::arg("input_format").none(),
        nb::arg("threads"), nb::arg("mask").none());
  m.def("deviation", &deviation_call, nb::arg("output"), nb::arg("golden"), nb::arg("format"));
  m.def("match", &match_call, nb::arg("output"), nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("algos"), nb::arg("policies"), nb::arg("block_r"), nb::arg("block_c"),
        nb::arg("causal"), nb::arg("scale_on"), nb::arg("threads"));
  m.def("presets", &presets_list);
  m.def("algorithms", &algorithms_list);
  m.def("policy_formats", &policy_formats, nb::arg("policy"));
  register_quantize(m);
  register_mma(m);
  register_tools(m);
}
