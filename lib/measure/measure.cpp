#include "measure/measure.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace attndev::measure {

attention::Inputs round_inputs(const attention::Inputs& raw, numerics::Format format) {
  const numerics::Overflow overflow = inputs::input_overflow(format);
  attention::Inputs out = raw;
  for (attention::Tensor* t : {&out.q, &out.k, &out.v})
    for (double& x : t->data) x = numerics::round_to(format, x, overflow);
  return out;
}

double max_abs_finite(std::span<const double> x) {
  double m = 0;
  for (double v : x)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  return m;
}

double max_rel_floor(numerics::Format output_format, double max_abs_reference) {
  const double floor = numerics::traits(output_format).unit_roundoff() * max_abs_reference;
  return std::isfinite(floor) ? floor : 0.0;
}

std::string NonFinite::text() const {
  return std::to_string(nan) + " NaN and " + std::to_string(inf) +
         " infinite value(s) (first at flat index " + std::to_string(first) + ")";
}

NonFinite count_non_finite(std::span<const double> x) {
  NonFinite n;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i])) continue;
    (std::isnan(x[i]) ? n.nan : n.inf) += 1;
    if (n.first < 0) n.first = static_cast<std::int64_t>(i);
  }
  return n;
}

std::optional<std::string> unmeasurable(const attention::Inputs& rounded, const Golden& golden,
                                        numerics::Format input_format) {
  const std::string format(numerics::format_name(input_format));
  const std::pair<const char*, const attention::Tensor*> tensors[] = {
      {"Q", &rounded.q}, {"K", &rounded.k}, {"V", &rounded.v}};
  for (const auto& [name, t] : tensors) {
    const NonFinite bad = count_non_finite(t->data);
    if (bad.any())
      return "inputs overflow " + format + ": " + name + " holds " +
             std::to_string(bad.nan + bad.inf) +
             " value(s) that round to inf or NaN (first at flat index " +
             std::to_string(bad.first) + "); use a distribution whose values fit the input format";
  }
  const NonFinite bad = count_non_finite(golden.output.o.data);
  if (bad.any())
    return "the FP64 golden is not finite (first at flat index " + std::to_string(bad.first) +
           ") for inputs in " + format + "; scale the inputs down";
  return std::nullopt;
}

Golden golden_of(const attention::Inputs& rounded, const attention::Options& options,
                 const GoldenFn& compute) {
  Golden g;
  g.output = compute ? compute(rounded, options) : attention::golden(rounded, options);
  g.max_abs = max_abs_finite(g.output.o.data);
  return g;
}

metrics::Deviation deviation(std::span<const double> output, std::span<const double> reference,
                             double reference_max_abs, numerics::Format output_format) {
  return metrics::compare(output, reference, max_rel_floor(output_format, reference_max_abs));
}

metrics::Deviation deviation(std::span<const double> output, const Golden& golden,
                             numerics::Format output_format) {
  return deviation(output, golden.output.o.data, golden.max_abs, output_format);
}

OutputComparison compare_outputs(std::span<const double> output, std::span<const double> reference,
                                 numerics::Format output_format) {
  OutputComparison c;
  c.difference = metrics::compare(output, reference, /*max_rel_floor=*/0.0);
  c.ulps = metrics::compare_ulps(output, reference, output_format);
  return c;
}

InputSource drawn(const attention::Shape& shape, const inputs::Distribution& distribution,
                  std::uint64_t seed) {
  return [shape, distribution, seed](numerics::Format format) {
    return inputs::make_inputs(shape, distribution, seed, format);
  };
}

InputSource rounded_from(std::function<attention::Inputs()> raw) {
  auto cached = std::make_shared<std::optional<attention::Inputs>>();
  return [raw = std::move(raw), cached](numerics::Format format) {
    if (!*cached) *cached = raw();
    return round_inputs(**cached, format);
  };
}

References::References(InputSource source, attention::Options options, GoldenFn golden)
    : source_(std::move(source)), options_(options), golden_(std::move(golden)) {}

const References::Reference& References::for_format(numerics::Format input_format) {
  const auto it = by_format_.find(input_format);
  if (it != by_format_.end()) return it->second;
  Reference r;
  r.inputs = source_(input_format);
  r.golden = golden_of(r.inputs, options_, golden_);
  r.unmeasurable = unmeasurable(r.inputs, r.golden, input_format);
  return by_format_.emplace(input_format, std::move(r)).first->second;
}

}  // namespace attndev::measure
