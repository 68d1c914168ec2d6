#include "experiment/results/interval.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace attndev::experiment {
// Named rather than anonymous: the library compiles in unity batches (see pivot.cpp).
namespace interval_detail {

// Continued fraction of the incomplete beta function (modified Lentz's method).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    for (const double coef : {m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                              -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {
      d = 1 + coef * d;
      d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
      c = 1 + coef / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      h *= d * c;
    }
    if (std::fabs(d * c - 1) < 1e-15) break;
  }
  return h;
}

// The regularized incomplete beta function I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  // The fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

// splitmix64: a small, well-mixed generator, enough to draw resample indices.
std::uint64_t next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace interval_detail

std::string_view interval_method_name(IntervalMethod m) {
  switch (m) {
    case IntervalMethod::t:
      return "t";
    case IntervalMethod::bootstrap:
      return "bootstrap";
    case IntervalMethod::none:
      break;
  }
  return "none";
}

double student_t_quantile(double p, double df) {
  // The CDF is monotone: bisection between -/+ a bound far beyond any 0.0005..0.9995 quantile
  // (t(0.9995, 1) is 636.6).
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::fabs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (interval_detail::student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

Interval mean_interval_95(std::span<const double> values) {
  const std::size_t n = values.size();
  if (n < 2) return {};
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / static_cast<double>(n);
  if (n < kBootstrapMinimum) {
    double ss = 0;
    for (double v : values) ss += (v - mean) * (v - mean);
    const double se =
        std::sqrt(ss / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n));
    const double half = student_t_quantile(0.975, static_cast<double>(n - 1)) * se;
    return {mean - half, mean + half, IntervalMethod::t};
  }
  std::uint64_t state = 0x6a09e667f3bcc909ull;
  for (double v : values) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    state ^= interval_detail::next(state) ^ bits;
  }
  std::vector<double> means(kBootstrapResamples);
  for (double& m : means) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += values[interval_detail::next(state) % n];
    m = s / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  const auto at = [&](double q) {
    return means[std::min(means.size() - 1, static_cast<std::size_t>(q * means.size()))];
  };
  return {at(0.025), at(0.975), IntervalMethod::bootstrap};
}

}  // namespace attndev::experiment
