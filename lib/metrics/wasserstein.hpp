// Wasserstein-1 distance between empirical value distributions, and the per-tensor comparison
// of two checkpoints built on it (`attndev wdist`).
//
// For samples u (n values) and v (m values), each value weighing 1/n resp. 1/m,
//   W1(u, v) = integral over the real line of |F_u(x) - F_v(x)| dx,
// F the empirical CDFs. Both CDFs are step functions that change only at sample values, so the
// integral is a finite sum over consecutive distinct values x_k < x_{k+1} of the merged samples:
//   W1 = sum_k |c_u(k)/n - c_v(k)/m| * (x_{k+1} - x_k),   c(k) = #samples <= x_k.
// This is what scipy.stats.wasserstein_distance computes; here the CDF difference is formed
// exactly in integers (|c_u m - c_v n| / (n m)) and the sum is taken in long double with
// Neumaier compensation, so the result is the exact sum rounded about once. n != m is fine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace attndev::metrics {

// W1 of two samples (any order). NaN when either holds a NaN (there is no CDF to integrate) or
// exactly one is empty; 0 when both are empty. Infinite values are exact points of the CDF: an
// interval of infinite length contributes inf unless the CDFs agree on it (same number of +inf
// resp. -inf relative to n and m), then 0. O((n + m) log(n + m)).
double wasserstein1(std::span<const double> u, std::span<const double> v);
// The same on samples already sorted ascending (no NaN); O(n + m).
double wasserstein1_sorted(std::span<const double> u, std::span<const double> v);

// One tensor of checkpoint A (the reference) against the same tensor of checkpoint B.
struct TensorDistance {
  double w1 = 0;            // wasserstein1(a, b) over the value distributions (any shapes)
  bool same_shape = false;  // max_abs / rel_l2 are defined only elementwise, for equal shapes
  double max_abs = 0;       // max |b - a|; NaN if any pair holds a NaN; 0 for empty tensors
  double rel_l2 = 0;        // ||b - a||_2 / ||a||_2 (0/0 -> 0, x/0 -> inf)
  double sq_diff = 0;       // sum (b - a)^2, for the aggregate relative L2
  double sq_ref = 0;        // sum a^2
  std::int64_t count_a = 0, count_b = 0;
  std::int64_t nan_a = 0, nan_b = 0;  // NaN elements: reported, never dropped
  std::int64_t inf_a = 0, inf_b = 0;
};

// a, b: flat values (C order). `same_shape` comes from the caller, who knows the shapes.
TensorDistance tensor_distance(std::span<const double> a, std::span<const double> b,
                               bool same_shape);

// Over all compared tensors of two checkpoints.
struct DistanceAggregate {
  std::int64_t tensors = 0;
  std::int64_t elements = 0;  // sum of count_a + count_b
  // Element-weighted mean of W1, weight count_a + count_b per tensor (a large tensor moves it
  // more than a bias vector). NaN if any tensor's W1 is NaN.
  double w1_mean = 0;
  std::int64_t same_shape_tensors = 0;
  double max_abs = 0;  // max of max_abs over same-shape tensors (NaN propagates)
  double rel_l2 = 0;   // sqrt(sum sq_diff / sum sq_ref) over same-shape tensors
};

DistanceAggregate aggregate(std::span<const TensorDistance> parts);

}  // namespace attndev::metrics
