#pragma once
// Neumaier's compensated sum, the one definition the metrics share (deviation in double,
// Wasserstein-1 and checkpoint norms in long double).

#include <cmath>

namespace attndev::metrics {

// The carry recovers what each addition rounds away, so a long sum of terms of mixed size stays
// within a few ulps of exact instead of an error growing with the element count (attention
// outputs reach 10^7 elements). A sum that overflows (or meets an inf term) stays inf: the carry
// is left alone then, or inf - inf in it would turn the result into NaN.
template <class T>
struct CompensatedSum {
  T sum = 0;
  T carry = 0;
  void add(T x) {
    const T t = sum + x;
    if (!std::isfinite(t)) {
      sum = t;
      return;
    }
    carry += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  T value() const { return sum + carry; }
};

}  // namespace attndev::metrics
