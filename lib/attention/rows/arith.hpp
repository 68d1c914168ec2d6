// The arithmetic a row function computes in: every operation names the policy stage whose format
// it rounds to, so reading a row function shows where precision is lost (STYLE.md #3).
//
// Row functions are templates over the arithmetic model A. Two models exist:
//   PolicyArith (here)          double values; each operation is numerics' exact-then-rounded
//                               *_in call in the stage's format. The reference (generic) path,
//                               the fp8 algorithms and the faithful CUDA kernels.
//   NativeArith<T, kFused>      T = float or double; each operation is one IEEE operation in T
//   (attention/kernels.hpp)     (valid only where fast_kind() says T *is* the policy's
//                               arithmetic). The SIMD fast paths.
// Both give the same bits wherever the fast path is taken (test_fast_path.cpp).
//
// The interface of a model A:
//   Value                                   the type values are held in
//   add/sub/mul/div(stage, x, y)            one operation rounded once to stage's format
//   mac(stage, acc, x, y)                   acc + x*y: fused (one rounding) or not, as policy.fma
//   mul_sub(stage, x, y, z)                 x*y - z: fused or not, as policy.fma
//   exp/exp2(stage, x)                      numerics' own exp/exp2, rounded to stage's format
//   round(stage, x), round_all(stage, x, n) values as stage stores them (round_all: an array,
//                                           so that the fast path's loop stays vectorized)
//   row_sum()                               the Reduction of softmax row sums (below)
#pragma once

#include "numerics/arith.hpp"
#include "numerics/host_device.hpp"
#include "numerics/math.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention::rows {

using numerics::Stage;

// A reduction's two formats: the stage whose format its running sum is held in while terms are
// added, and the stage its result is stored in. Kept apart because kernels and frameworks differ
// exactly here (a framework's bf16 row sum accumulates in fp32 and is stored in bf16). Every
// model so far accumulates in the format it stores, so the final rounding is exact; the hook is
// where a framework model changes that.
struct Reduction {
  Stage accumulate;
  Stage stored;
};

// max with std::max's semantics (a < b ? b : a), not fmax: they differ when a NaN score appears
// (an overflowed policy), and every backend must propagate it the same way. A NaN never becomes
// the max, so a row of NaN scores keeps max == -inf.
template <class T>
ATTNDEV_HD inline T max_like_std(T a, T b) {
  return a < b ? b : a;
}

struct PolicyArith {
  using Value = double;
  numerics::PrecisionPolicy policy;

  ATTNDEV_HD double add(Stage s, double x, double y) const {
    return numerics::add_in(policy[s], x, y);
  }
  ATTNDEV_HD double sub(Stage s, double x, double y) const {
    return numerics::sub_in(policy[s], x, y);
  }
  ATTNDEV_HD double mul(Stage s, double x, double y) const {
    return numerics::mul_in(policy[s], x, y);
  }
  ATTNDEV_HD double div(Stage s, double x, double y) const {
    return numerics::div_in(policy[s], x, y);
  }
  ATTNDEV_HD double mac(Stage s, double acc, double x, double y) const {
    return numerics::mac_in(policy[s], policy.fma, acc, x, y);
  }
  ATTNDEV_HD double mul_sub(Stage s, double x, double y, double z) const {
    const numerics::Format f = policy[s];
    return policy.fma ? numerics::fma_in(f, x, y, -z)
                      : numerics::sub_in(f, numerics::mul_in(f, x, y), z);
  }
  ATTNDEV_HD double exp(Stage s, double x) const { return numerics::exp_in(policy[s], x); }
  ATTNDEV_HD double exp2(Stage s, double x) const { return numerics::exp2_in(policy[s], x); }
  ATTNDEV_HD double round(Stage s, double x) const { return policy.round(s, x); }
  ATTNDEV_HD void round_all(Stage s, double* x, int n) const {
    for (int i = 0; i < n; ++i) x[i] = policy.round(s, x[i]);
  }
  ATTNDEV_HD static constexpr Reduction row_sum() { return {Stage::stats, Stage::stats}; }
};

// sum + x[0] + x[1] + ... + x[n-1] in this order, one rounding per addition in r.accumulate,
// the result rounded to r.stored. Every softmax row sum goes through here.
// A model may provide its own a.sum_into with the same result (the SIMD path's shortcut for
// narrow formats, attention/kernels.hpp).
template <class A>
ATTNDEV_HD inline typename A::Value sum_into(const A& a, Reduction r, typename A::Value sum,
                                             const typename A::Value* x, int n) {
  if constexpr (requires { a.sum_into(r, sum, x, n); }) {
    return a.sum_into(r, sum, x, n);
  } else {
    for (int j = 0; j < n; ++j) sum = a.add(r.accumulate, sum, x[j]);
    return a.round(r.stored, sum);
  }
}

}  // namespace attndev::attention::rows
