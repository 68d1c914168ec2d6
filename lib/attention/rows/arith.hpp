// The arithmetic a row function computes in: every operation names the policy stage whose formats
// it computes in and is stored in, so reading a row function shows where precision is lost
// (docs/CONTRIBUTING.md #3).
//
// Row functions are templates over the arithmetic model A. Two models exist:
//   PolicyArith (here)          double values; each operation is numerics' exact-then-rounded
//                               *_in call in the stage's compute format, then (framework model)
//                               rounded to the stage's stored format. The reference (generic)
//                               path, the fp8 algorithms and the faithful CUDA kernels.
//   NativeArith<T, kFused>      T = float or double; each operation is one IEEE operation in T
//   (attention/kernels.hpp)     (valid only where fast_kind() says T *is* the policy's
//                               arithmetic). The SIMD fast paths.
// Both give the same bits wherever the fast path is taken (test_fast_path.cpp).
//
// Where an operation's result goes (the first argument, `where`):
//   Stage s     computed in s's compute format, then stored in s's format: one rounding under
//               the kernel model (the two formats are equal), two under the framework model
//               (opmath fp32, then the tensor's format; numerics/policy.hpp)
//   Held{s}     computed in s's compute format and kept there: an intermediate that never leaves
//               one framework op (inside a fused softmax; a reduction's running sum)
//
// The interface of a model A:
//   Value                                   the type values are held in
//   add/sub/mul/div(where, x, y)            one operation, rounded as `where` says
//   mac(stage, acc, x, y)                   one step of a reduction: acc + x*y in stage's compute
//                                           format, fused (one rounding) or not, as policy.fma;
//                                           the reduction's result is stored by store/store_all
//   mul_sub(where, x, y, z)                 x*y - z: fused or not, as policy.fma
//   exp/exp2(where, x)                      numerics' own exp/exp2 in the compute format, stored
//   round(stage, x), round_all(stage, x, n) values as stage stores them (round_all: an array,
//                                           so that the fast path's loop stays vectorized)
//   store(stage, x), store_all(stage, x, n) a reduction's result (matmul, row sum), accumulated
//                                           in stage's compute format, as the stage stores it:
//                                           nothing under the kernel model (it accumulated in the
//                                           stored format), round() under the framework model
#pragma once

#include "numerics/arith.hpp"
#include "numerics/host_device.hpp"
#include "numerics/math.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention::rows {

using numerics::Stage;

// An intermediate of stage s kept in s's compute format (see the top of this file).
struct Held {
  Stage stage;
};

ATTNDEV_HD constexpr Stage stage_of(Stage s) {
  return s;
}
ATTNDEV_HD constexpr Stage stage_of(Held h) {
  return h.stage;
}

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

  template <class W>
  ATTNDEV_HD numerics::Format compute(W where) const {
    return policy.compute(stage_of(where));
  }
  // A result computed in where's compute format, as `where` keeps it.
  ATTNDEV_HD double store(Stage s, double x) const {
    return policy.model == numerics::Model::kernel ? x : policy.round(s, x);
  }
  ATTNDEV_HD double store(Held, double x) const { return x; }
  template <class W>
  ATTNDEV_HD void store_all(W where, double* x, int n) const {
    if (policy.model == numerics::Model::kernel) return;
    for (int i = 0; i < n; ++i) x[i] = store(where, x[i]);
  }

  template <class W>
  ATTNDEV_HD double add(W w, double x, double y) const {
    return store(w, numerics::add_in(compute(w), x, y));
  }
  template <class W>
  ATTNDEV_HD double sub(W w, double x, double y) const {
    return store(w, numerics::sub_in(compute(w), x, y));
  }
  template <class W>
  ATTNDEV_HD double mul(W w, double x, double y) const {
    return store(w, numerics::mul_in(compute(w), x, y));
  }
  template <class W>
  ATTNDEV_HD double div(W w, double x, double y) const {
    return store(w, numerics::div_in(compute(w), x, y));
  }
  ATTNDEV_HD double mac(Stage s, double acc, double x, double y) const {
    return numerics::mac_in(policy.compute(s), policy.fma, acc, x, y);
  }
  template <class W>
  ATTNDEV_HD double mul_sub(W w, double x, double y, double z) const {
    const numerics::Format f = compute(w);
    return store(w, policy.fma ? numerics::fma_in(f, x, y, -z)
                               : numerics::sub_in(f, numerics::mul_in(f, x, y), z));
  }
  template <class W>
  ATTNDEV_HD double exp(W w, double x) const {
    return store(w, numerics::exp_in(compute(w), x));
  }
  template <class W>
  ATTNDEV_HD double exp2(W w, double x) const {
    return store(w, numerics::exp2_in(compute(w), x));
  }
  ATTNDEV_HD double round(Stage s, double x) const { return policy.round(s, x); }
  ATTNDEV_HD double round(Held, double x) const { return x; }  // already in its format
  ATTNDEV_HD void round_all(Stage s, double* x, int n) const {
    for (int i = 0; i < n; ++i) x[i] = policy.round(s, x[i]);
  }
};

// sum + x[0] + x[1] + ... + x[n-1] in this order, each addition held in where's compute format,
// the result stored as `where` says (Stage: rounded to the stage's format under the framework
// model; Held: kept). Every softmax row sum goes through here: under the kernel model it is
// rounded to the stats format at every term, under the framework model it accumulates in fp32
// and is rounded once, as a framework's sum(-1) of a bf16 tensor is.
// A model may provide its own a.sum_into with the same result (the SIMD path's shortcut for
// narrow formats, attention/kernels.hpp).
template <class A, class W>
ATTNDEV_HD inline typename A::Value sum_into(const A& a, W where, typename A::Value sum,
                                             const typename A::Value* x, int n) {
  if constexpr (requires { a.sum_into(where, sum, x, n); }) {
    return a.sum_into(where, sum, x, n);
  } else {
    const Held held{stage_of(where)};
    for (int j = 0; j < n; ++j) sum = a.add(held, sum, x[j]);
    return a.store(where, sum);
  }
}

}  // namespace attndev::attention::rows
