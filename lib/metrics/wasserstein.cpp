// Exact 1-D Wasserstein-1 by merging sorted samples; see wasserstein.hpp for the derivation.
#include "metrics/wasserstein.hpp"

#include "metrics/compensated_sum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attndev::metrics {

namespace {

bool has_nan(std::span<const double> x) {
  return std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); });
}

}  // namespace

double wasserstein1_sorted(std::span<const double> u, std::span<const double> v) {
  const std::size_t n = u.size();
  const std::size_t m = v.size();
  if (n == 0 && m == 0) return 0.0;
  if (n == 0 || m == 0) return std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // sum of |c_u m - c_v n| * (x_{k+1} - x_k); divided by n m at the end
  CompensatedSum<long double> total;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    const double x = std::min(i < n ? u[i] : kInf, j < m ? v[j] : kInf);
    while (i < n && u[i] == x) ++i;
    while (j < m && v[j] == x) ++j;
    if (i == n && j == m) break;
    const double next = std::min(i < n ? u[i] : kInf, j < m ? v[j] : kInf);
    // c_u/n - c_v/m = (c_u m - c_v n) / (n m): exact in 128-bit integers.
    const __int128 num = static_cast<__int128>(i) * static_cast<__int128>(m) -
                         static_cast<__int128>(j) * static_cast<__int128>(n);
    if (num == 0) continue;  // CDFs agree here, whatever the interval's length (0 * inf := 0)
    const long double weight = static_cast<long double>(num < 0 ? -num : num);
    // Two doubles differ by a long double almost always exactly (64-bit significand).
    const long double width = static_cast<long double>(next) - static_cast<long double>(x);
    total.add(weight * width);
  }
  const long double nm = static_cast<long double>(n) * static_cast<long double>(m);
  return static_cast<double>(total.value() / nm);
}

double wasserstein1(std::span<const double> u, std::span<const double> v) {
  if (has_nan(u) || has_nan(v)) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> su(u.begin(), u.end());
  std::vector<double> sv(v.begin(), v.end());
  std::sort(su.begin(), su.end());
  std::sort(sv.begin(), sv.end());
  return wasserstein1_sorted(su, sv);
}

TensorDistance tensor_distance(std::span<const double> a, std::span<const double> b,
                               bool same_shape) {
  TensorDistance d;
  d.count_a = static_cast<std::int64_t>(a.size());
  d.count_b = static_cast<std::int64_t>(b.size());
  for (double x : a) {
    d.nan_a += std::isnan(x);
    d.inf_a += std::isinf(x);
  }
  for (double x : b) {
    d.nan_b += std::isnan(x);
    d.inf_b += std::isinf(x);
  }
  d.w1 = wasserstein1(a, b);
  d.same_shape = same_shape && a.size() == b.size();
  if (!d.same_shape) {
    d.max_abs = d.rel_l2 = d.sq_diff = d.sq_ref = std::numeric_limits<double>::quiet_NaN();
    return d;
  }
  double max_abs = 0;
  bool nan = false;
  CompensatedSum<long double> diff2, ref2;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double e = b[k] - a[k];  // NaN for inf - inf: reported as NaN, not as 0
    if (std::isnan(e))
      nan = true;
    else
      max_abs = std::max(max_abs, std::fabs(e));
    diff2.add(static_cast<long double>(e) * e);
    ref2.add(static_cast<long double>(a[k]) * a[k]);
  }
  d.max_abs = nan ? std::numeric_limits<double>::quiet_NaN() : max_abs;
  d.sq_diff = static_cast<double>(diff2.value());
  d.sq_ref = static_cast<double>(ref2.value());
  const long double num = diff2.value();
  const long double den = ref2.value();
  if (num == 0 && den == 0)
    d.rel_l2 = 0;
  else
    d.rel_l2 = static_cast<double>(std::sqrt(num) / std::sqrt(den));
  return d;
}

DistanceAggregate aggregate(std::span<const TensorDistance> parts) {
  DistanceAggregate g;
  long double w1_num = 0, w1_den = 0, diff2 = 0, ref2 = 0;
  bool w1_nan = false, max_nan = false;
  for (const TensorDistance& d : parts) {
    ++g.tensors;
    const std::int64_t weight = d.count_a + d.count_b;
    g.elements += weight;
    if (std::isnan(d.w1))
      w1_nan = true;
    else if (weight > 0) {
      w1_num += static_cast<long double>(weight) * d.w1;
      w1_den += weight;
    }
    if (!d.same_shape) continue;
    ++g.same_shape_tensors;
    if (std::isnan(d.max_abs))
      max_nan = true;
    else
      g.max_abs = std::max(g.max_abs, d.max_abs);
    diff2 += d.sq_diff;
    ref2 += d.sq_ref;
  }
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  g.w1_mean = w1_nan ? kNaN : (w1_den > 0 ? static_cast<double>(w1_num / w1_den) : 0.0);
  if (max_nan) g.max_abs = kNaN;
  if (g.same_shape_tensors == 0)
    g.max_abs = g.rel_l2 = kNaN;
  else if (diff2 == 0 && ref2 == 0)
    g.rel_l2 = 0;
  else
    g.rel_l2 = static_cast<double>(std::sqrt(diff2) / std::sqrt(ref2));
  return g;
}

}  // namespace attndev::metrics
