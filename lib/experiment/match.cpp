#include "experiment/match.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <tuple>

#include "config/policy_json.hpp"
#include "experiment/results/result_row.hpp"
#include "experiment/run/variant_runner.hpp"
#include "measure/measure.hpp"
#include "numerics/round.hpp"

namespace attndev::experiment {

namespace {

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * f);
  return buf;
}

std::string short_num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

double ulp_of(double x, numerics::Format format) {
  const numerics::FormatTraits t = numerics::traits(format);
  x = std::fabs(x);
  if (x == 0 || !std::isfinite(x)) return 0;
  const int e = std::max(std::ilogb(x), t.min_exponent);
  return std::ldexp(1.0, e - t.fraction_bits);
}

std::vector<numerics::Format> formats_holding(const attention::Tensor& o) {
  std::vector<numerics::Format> out;
  for (numerics::Format f : {numerics::Format::fp64, numerics::Format::fp32, numerics::Format::tf32,
                             numerics::Format::fp16, numerics::Format::bf16}) {
    const bool holds = std::all_of(o.data.begin(), o.data.end(), [&](double x) {
      return !std::isfinite(x) || numerics::round_to(f, x) == x;
    });
    if (holds) out.push_back(f);
  }
  return out;
}

std::vector<numerics::PrecisionPolicy> default_policies(const attention::Tensor& o) {
  const std::vector<numerics::Format> formats = formats_holding(o);
  const auto holds = [&](numerics::Format f) {
    return std::find(formats.begin(), formats.end(), f) != formats.end();
  };
  std::vector<numerics::PrecisionPolicy> out;
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets) {
    if (p.policy.input == numerics::Format::fp8_e4m3 ||
        p.policy.input == numerics::Format::fp8_e5m2)
      continue;
    if (holds(p.policy.output)) out.push_back(p.policy);
  }
  for (numerics::Format f : {numerics::Format::bf16, numerics::Format::fp16}) {
    if (!holds(f)) continue;
    numerics::PrecisionPolicy upcast = numerics::find_preset("fp32")->policy;
    upcast.input = f;
    upcast.output = f;
    out.push_back(upcast);
  }
  return out;
}

std::vector<MatchCandidate> make_candidates(const std::vector<attention::Algorithm>& algorithms,
                                            const std::vector<numerics::PrecisionPolicy>& policies,
                                            const std::vector<int>& block_r,
                                            const std::vector<int>& block_c) {
  std::vector<MatchCandidate> out;
  for (attention::Algorithm a : algorithms) {
    for (const numerics::PrecisionPolicy& p : policies) {
      Variant v;
      v.algorithm = a;
      v.policy = p;
      v.policy_label = config::policy_label(p);
      const std::string base = std::string(attention::algorithm_name(a)) + " " + v.policy_label;
      if (a == attention::Algorithm::baseline || attention::is_twin_algorithm(a)) {
        v.name = base;
        out.push_back({v});
        continue;
      }
      for (int br : block_r)
        for (int bc : block_c) {
          Variant t = v;
          t.block_r = br;
          t.block_c = bc;
          t.name = base + (block_r.size() > 1 ? " Br=" + std::to_string(br) : "") +
                   " Bc=" + std::to_string(bc);
          out.push_back({t});
        }
    }
  }
  return out;
}

std::vector<attention::Algorithm> default_twin_algorithms() {
  return {attention::Algorithm::fa2_cuda, attention::Algorithm::fa2_cuda_unfused,
          attention::Algorithm::mem_efficient, attention::Algorithm::flash2_tc_twin};
}

std::vector<numerics::mma::Arch> default_twin_profiles() {
  return {std::begin(numerics::mma::kAllArchs), std::end(numerics::mma::kAllArchs)};
}

std::vector<MatchCandidate> search_candidates(
    const std::vector<attention::Algorithm>& algorithms,
    const std::vector<numerics::PrecisionPolicy>& policies, const std::vector<int>& block_r,
    const std::vector<int>& block_c, const std::vector<attention::Algorithm>& twins,
    const std::vector<numerics::mma::Arch>& profiles) {
  std::vector<MatchCandidate> out = make_candidates(algorithms, policies, block_r, block_c);
  for (MatchCandidate& c : make_twin_candidates(twins, policies, profiles))
    out.push_back(std::move(c));
  return out;
}

std::vector<MatchCandidate> make_twin_candidates(
    const std::vector<attention::Algorithm>& twins,
    const std::vector<numerics::PrecisionPolicy>& policies,
    const std::vector<numerics::mma::Arch>& profiles) {
  std::vector<numerics::PrecisionPolicy> kernels;
  for (numerics::PrecisionPolicy p : policies) {
    if (p.input != numerics::Format::bf16 && p.input != numerics::Format::fp16) continue;
    const numerics::PrecisionPolicy k =
        numerics::find_preset(p.input == numerics::Format::bf16 ? "kernel-bf16" : "kernel-fp16")
            ->policy;
    if (!(p == k)) continue;
    for (numerics::mma::Arch a : profiles) {
      p.mma = a;
      if (std::find(kernels.begin(), kernels.end(), p) == kernels.end()) kernels.push_back(p);
    }
  }
  std::vector<MatchCandidate> out;
  for (attention::Algorithm a : twins)
    for (const numerics::PrecisionPolicy& p : kernels) {
      Variant v;
      v.algorithm = a;
      v.policy = p;
      v.policy_label = config::policy_label(p);
      v.name = std::string(attention::algorithm_name(a)) + " " + v.policy_label;
      out.push_back({v});
    }
  return out;
}

namespace {

// Most bit-identical elements first, then the smallest mean |O - O_candidate| (NaN last), then
// candidate order: a total order, so the ranking is stable and defined even for NaN metrics.
// (Sorted by index with std::sort: std::stable_sort instantiates libstdc++ 12's deprecated
// get_temporary_buffer, which clang 19 reports.)
std::vector<MatchResult> rank_matches(std::vector<MatchResult> results) {
  const auto key = [&](std::size_t i) {
    const MatchResult& m = results[i];
    const double mean = std::isnan(m.difference.mean_abs) ? INFINITY : m.difference.mean_abs;
    return std::tuple{!m.status.is_ok(), -m.ulps.identical_fraction, mean, i};
  };
  std::vector<std::size_t> order(results.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<MatchResult> ranked;
  ranked.reserve(results.size());
  for (std::size_t i : order) ranked.push_back(std::move(results[i]));
  return ranked;
}

}  // namespace

std::vector<MatchResult> match_output(const attention::Tensor& output,
                                      const attention::Inputs& inputs,
                                      const std::vector<MatchCandidate>& candidates,
                                      const MatchOptions& options) {
  if (output.batch != inputs.q.batch || output.heads != inputs.q.heads ||
      output.rows != inputs.q.rows || output.cols != inputs.q.cols)
    throw std::invalid_argument("the output's shape does not match Q's (B, H, N_q, d)");
  // Inputs rounded and a golden computed once per input format the candidates read, as a sweep
  // does.
  measure::References references(measure::rounded_from([&inputs] { return inputs; }),
                                 options.options);
  const double output_max_abs = measure::max_abs_finite(output.data);
  std::vector<MatchResult> results;
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const Variant& v = candidates[c].variant;
    const measure::References::Reference& ref = references.for_format(v.policy.input);
    attention::Options o = options.options;
    o.block_r = v.block_r.value_or(o.block_r);
    o.block_c = v.block_c.value_or(o.block_c);
    VariantOutcome out = run_variant(v, ref.inputs, o);
    MatchResult m;
    m.candidate = candidates[c];
    m.status = out.status;
    m.output_dev = measure::deviation(output.data, ref.golden, v.policy.output);
    if (out.status.is_ok()) {
      const measure::OutputComparison agreement =
          measure::compare_outputs(output.data, out.output.o.data, v.policy.output);
      m.ulps = agreement.ulps;
      m.difference = agreement.difference;
      const double unit = ulp_of(output_max_abs, v.policy.output);
      m.max_diff_ulps_at_max = unit > 0                    ? m.difference.max_abs / unit
                               : m.difference.max_abs == 0 ? 0.0
                                                           : INFINITY;
      m.candidate_dev = measure::deviation(out.output.o.data, ref.golden, v.policy.output);
    }
    results.push_back(std::move(m));
    if (options.on_progress) options.on_progress(c + 1, candidates.size());
  }
  return rank_matches(std::move(results));
  return results;
}

std::string match_verdict(const std::vector<MatchResult>& ranked) {
  if (ranked.empty() || !ranked.front().status.is_ok()) return "no candidate ran";
  const MatchResult& best = ranked.front();
  const std::string name = best.candidate.variant.name;
  const std::string format = numerics::format_name(best.candidate.variant.policy.output);
  const double ratio = best.output_dev.mean_abs > 0
                           ? best.candidate_dev.mean_abs / best.output_dev.mean_abs
                           : (best.candidate_dev.mean_abs == 0 ? 1.0 : INFINITY);
  const std::string deviation = "mean |deviation| from the FP64 golden " +
                                short_num(best.candidate_dev.mean_abs) + " (candidate) vs " +
                                short_num(best.output_dev.mean_abs) + " (yours), ratio " +
                                short_num(ratio);
  // Candidates can coincide (flash1 and flash2 under one policy with a single K/V tile, policies
  // that differ only in stages these inputs never reach, torch-math-* and framework-* on the
  // baseline): name those whose agreement equals the best's, or the verdict would claim one
  // policy where several explain the output equally.
  std::vector<std::string> also;
  for (std::size_t i = 1; i < ranked.size(); ++i)
    if (ranked[i].status.is_ok() &&
        ranked[i].ulps.identical_fraction == best.ulps.identical_fraction &&
        ranked[i].difference.mean_abs == best.difference.mean_abs &&
        ranked[i].difference.max_abs == best.difference.max_abs)
      also.push_back(ranked[i].candidate.variant.name);
  std::string equally;
  if (!also.empty()) {
    equally = "; equally: ";
    for (std::size_t i = 0; i < also.size() && i < 3; ++i) equally += (i ? ", " : "") + also[i];
    if (also.size() > 3) equally += " and " + std::to_string(also.size() - 3) + " more";
  }
  if (best.ulps.identical_fraction == 1.0)
    return "explained exactly by " + name + ": every element bit-identical" + equally;
  // Half the elements identical means the same rounding steps in the same places, with a few
  // elements moved by a different summation order or exp (an accuracy twin shares far fewer).
  if (best.ulps.identical_fraction >= 0.5)
    return "explained by " + name + ": " + percent(best.ulps.identical_fraction) +
           " of elements bit-identical, the others within " + short_num(best.max_diff_ulps_at_max) +
           " ulp(s) of " + format + " at the output's largest magnitude (ulp histogram " +
           best.ulps.histogram_text() + "); " + deviation + equally;
  // No twin in the rounding: say which candidate is as accurate (mean |deviation| ratio nearest 1).
  const MatchResult* closest = &best;
  const auto distance = [](const MatchResult& m) {
    return m.output_dev.mean_abs > 0 && m.candidate_dev.mean_abs > 0
               ? std::fabs(std::log(m.candidate_dev.mean_abs / m.output_dev.mean_abs))
               : INFINITY;
  };
  for (const MatchResult& m : ranked)
    if (m.status.is_ok() && distance(m) < distance(*closest)) closest = &m;
  return "no candidate reproduces it element by element (most: " + name + ", " +
         percent(best.ulps.identical_fraction) + " bit-identical, differences up to " +
         short_num(best.max_diff_ulps_at_max) + " ulp(s) of " + format +
         " at the output's largest magnitude" +
         "); as accurate: " + closest->candidate.variant.name + ", mean |deviation| " +
         short_num(closest->candidate_dev.mean_abs) + " vs yours " +
         short_num(closest->output_dev.mean_abs);
}

}  // namespace attndev::experiment
