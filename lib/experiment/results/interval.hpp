// 95% confidence intervals of a mean over trials, for `attndev plot --spread ci`.
//
// Few trials (2 to kBootstrapMinimum - 1): Student's t interval, mean +- t(0.975, n-1) s / sqrt(n),
// which assumes the trials' values are roughly normal; with so few values nothing better is
// available. From kBootstrapMinimum trials on: the percentile bootstrap (kBootstrapResamples
// resamples of the mean, the 2.5% and 97.5% points), which assumes nothing about the shape; below
// about 20 values its intervals are known to be too narrow, hence the switch. One trial: none.
// The resampling is seeded from the values themselves, so the same cell gives the same interval
// on every run and machine.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace attndev::experiment {

enum class IntervalMethod : unsigned char { none, t, bootstrap };

inline constexpr std::size_t kBootstrapMinimum = 20;
inline constexpr std::size_t kBootstrapResamples = 10000;

struct Interval {
  double low = 0, high = 0;
  IntervalMethod method = IntervalMethod::none;
};

// "none", "t", "bootstrap": the word in the pivot's CSV and markdown.
std::string_view interval_method_name(IntervalMethod m);

// The 95% interval of the mean of `values` (finite), by the method above.
Interval mean_interval_95(std::span<const double> values);

// The p-quantile of Student's t distribution with `df` degrees of freedom (0 < p < 1, df >= 1),
// by bisection on its CDF (the regularized incomplete beta function): t(0.975, 1) = 12.706...
double student_t_quantile(double p, double df);

}  // namespace attndev::experiment
