#include "measure/checks.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace attndev::measure {

BitComparison compare_bits(std::span<const double> reference, std::span<const double> output) {
  BitComparison r;
  if (reference.size() != output.size()) {
    r.mismatches = reference.size() > output.size() ? reference.size() : output.size();
    return r;
  }
  for (std::size_t i = 0; i < reference.size(); ++i) {
    ++r.compared;
    if (std::memcmp(&reference[i], &output[i], sizeof(double)) != 0 && r.mismatches++ == 0) {
      r.first_mismatch = i;
      r.reference_value = reference[i];
      r.output_value = output[i];
    }
  }
  return r;
}

CheckResult bit_identical(std::span<const double> output, std::span<const double> reference) {
  const BitComparison c = compare_bits(reference, output);
  CheckResult r;
  r.rule = "bit_identical";
  r.compared = c.compared > 0 && c.compared == reference.size();
  r.pass = r.compared && c.mismatches == 0;
  char buf[256];
  if (!r.compared)
    std::snprintf(buf, sizeof buf, "sizes differ or empty (%zu vs %zu elements)", output.size(),
                  reference.size());
  else if (c.mismatches == 0)
    std::snprintf(buf, sizeof buf, "%zu elements identical", c.compared);
  else
    std::snprintf(buf, sizeof buf,
                  "%zu of %zu elements differ; first at %zu: reference %.17g, got %.17g",
                  c.mismatches, c.compared, c.first_mismatch, c.reference_value, c.output_value);
  r.detail = buf;
  return r;
}

BaselineRule baseline_rule(std::span<const double> output, std::span<const double> baseline,
                           const Golden& golden, numerics::Format output_format) {
  BaselineRule r;
  r.kernel = deviation(output, golden, output_format);
  r.baseline = deviation(baseline, golden, output_format);
  r.floor = max_rel_floor(output_format, golden.max_abs);
  r.bound = 2.0 * r.baseline.max_abs + r.floor;
  return r;
}

CheckResult within_baseline_rule(std::span<const double> output, std::span<const double> baseline,
                                 const Golden& golden, numerics::Format output_format) {
  CheckResult r;
  r.rule = "within_baseline_rule";
  const std::span<const double> gold = golden.output.o.data;
  if (output.empty() || output.size() != gold.size() || baseline.size() != gold.size()) {
    r.detail = "sizes differ or empty";
    return r;
  }
  const BaselineRule b = baseline_rule(output, baseline, golden, output_format);
  r.compared = true;
  r.pass = b.kernel.max_abs <= b.bound;  // false for NaN
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "max_abs %.4e vs bound %.4e (2 x baseline %.4e + floor %.4e); nan/inf %lld/%lld",
                b.kernel.max_abs, b.bound, b.baseline.max_abs, b.floor,
                static_cast<long long>(b.kernel.nan_count),
                static_cast<long long>(b.kernel.inf_count));
  r.detail = buf;
  return r;
}

}  // namespace attndev::measure
