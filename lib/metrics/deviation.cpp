#include "metrics/deviation.hpp"

#include "metrics/compensated_sum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attndev::metrics {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A pair that both sides agree is the same infinity carries no error; every other non-finite
// pair poisons the metrics (docs/CONTRIBUTING.md #9: infinities must match in sign, NaN always
// fails).
bool matching_infinities(double x, double r) {
  return std::isinf(x) && x == r;
}

}  // namespace

Deviation compare(std::span<const double> x, std::span<const double> reference,
                  double max_rel_floor) {
  if (x.size() != reference.size())
    throw std::invalid_argument("metrics::compare: sizes differ (" + std::to_string(x.size()) +
                                " vs reference " + std::to_string(reference.size()) + ")");
  if (!(max_rel_floor >= 0) || std::isinf(max_rel_floor))
    throw std::invalid_argument("metrics::compare: max_rel_floor must be finite and >= 0, got " +
                                std::to_string(max_rel_floor));
  Deviation d;
  d.max_rel_floor = max_rel_floor;
  d.count = static_cast<std::int64_t>(x.size());
  if (x.empty()) return d;

  // Pass 1: non-finite values first, then maxima (the scales of pass 2) and the mean.
  std::int64_t first_bad = -1;
  double max_x = 0, max_ref = 0;
  CompensatedSum<double> sum_abs, sum_ref_abs;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i], ri = reference[i];
    if (std::isnan(xi)) ++d.nan_count;
    if (std::isinf(xi)) ++d.inf_count;
    if (!std::isfinite(xi) || !std::isfinite(ri)) {
      if (!matching_infinities(xi, ri) && first_bad < 0) first_bad = static_cast<std::int64_t>(i);
      continue;
    }
    const double a = std::fabs(xi - ri);
    if (a > d.max_abs || d.worst_index < 0) {
      d.max_abs = a;
      d.worst_index = static_cast<std::int64_t>(i);
    }
    max_x = std::max(max_x, std::fabs(xi));
    max_ref = std::max(max_ref, std::fabs(ri));
    d.max_rel = std::max(d.max_rel, a == 0 ? 0.0 : a / std::max(std::fabs(ri), max_rel_floor));
    sum_abs.add(a);
    sum_ref_abs.add(std::fabs(ri));
  }
  if (first_bad >= 0) {
    d.max_abs = d.mean_abs = d.std_abs = d.rmse = d.rel_l2 = d.rel_l1 = d.max_rel = d.cos_sim =
        kNaN;
    d.worst_index = first_bad;
    return d;
  }
  const double n = static_cast<double>(x.size());
  d.mean_abs = sum_abs.value() / n;
  if (sum_ref_abs.value() > 0) {
    d.rel_l1 = sum_abs.value() / sum_ref_abs.value();
  } else {
    d.rel_l1 = sum_abs.value() > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  }

  // Pass 2: squares of values divided by their maximum, so that neither 1e200 overflows nor 1e-200
  // underflows; the two-pass variance sum (a - mean)^2 cannot go negative or cancel.
  const double scale_d = d.max_abs > 0 ? d.max_abs : 1.0;
  const double scale_x = max_x > 0 ? max_x : 1.0;
  const double scale_r = max_ref > 0 ? max_ref : 1.0;
  CompensatedSum<double> sq_dev, sq_diff, sq_x, sq_ref, dot;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i], ri = reference[i];
    if (!std::isfinite(xi)) continue;  // matching infinities: zero error, outside the norms
    const double diff = xi - ri;
    const double dev = (std::fabs(diff) - d.mean_abs) / scale_d;
    sq_dev.add(dev * dev);
    sq_diff.add((diff / scale_d) * (diff / scale_d));
    const double xs = xi / scale_x, rs = ri / scale_r;
    sq_x.add(xs * xs);
    sq_ref.add(rs * rs);
    dot.add(xs * rs);
  }
  d.std_abs = scale_d * std::sqrt(sq_dev.value() / n);
  const double norm_diff = scale_d * std::sqrt(sq_diff.value());
  d.rmse = scale_d * std::sqrt(sq_diff.value() / n);
  const double norm_ref = scale_r * std::sqrt(sq_ref.value());
  if (norm_ref > 0) {
    d.rel_l2 = norm_diff / norm_ref;
  } else {
    d.rel_l2 = norm_diff > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  const double sxx = sq_x.value(), srr = sq_ref.value();
  if (sxx == 0 && srr == 0) {
    d.cos_sim = 1.0;
  } else if (sxx == 0 || srr == 0) {
    d.cos_sim = 0.0;  // a zero vector points nowhere: no similarity to a non-zero one
  } else {
    // One square root of the product, not a product of two: for x == ref, sqrt(fl(s*s)) == s
    // exactly, so identical outputs give exactly 1. (The scaled sums lie in [1, n]: s*s cannot
    // overflow.) Rounding can still leave a cosine a few ulps past 1, which would read as a bug.
    d.cos_sim = std::clamp(dot.value() / std::sqrt(sxx * srr), -1.0, 1.0);
  }
  return d;
}

}  // namespace attndev::metrics
