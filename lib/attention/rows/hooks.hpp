// The hook points of the row functions: what an algorithm variant or a rounding model changes
// without copying a loop.
//
// Dequant (scores, the PV merge, the output): how stored operands become real values.
//   NoDequant                  baseline, flash1, flash2: operands are the values; merge_pv is
//                              the framework model's acc + P V (flash2's tensor form).
//   fp8's Fp8Dequant           (attention/fp8_dequant.hpp) the fp8 algorithms: e4m3 values
//                              times per-block scales, applied where FA-3 applies them.
// A Dequant type provides:
//   kBlockLocalPv              false: each block's P V is added to the running accumulator term
//                              by term (FA-2's register loop) under the kernel model; true: the
//                              block's P V is formed apart (from 0, in out_accum) and merged by
//                              merge_pv, which is where a per-block V scale is applied. The
//                              framework model always forms it apart (a matmul's output).
//   scores(a, i, j0, s, n)     raw dot products of row i with keys j0.. -> dequantized, in place
//   merge_pv(a, acc, pv, j0)   acc (already times alpha) + the block's pv
//   output(a, acc)             the baseline's output accumulator -> its real value
//
// State (m, l, O between K/V blocks): where the running state of an online softmax is rounded.
//   RegisterState              FA-2: m, l and the accumulator stay in registers (in the stats and
//                              out_accum formats they are computed in): nothing is rounded. Under
//                              the framework model every op's output is already stored, so the
//                              state is rounded once per block by the ops themselves.
//   HbmState                   FA-1: m and l are written to HBM in the stats format and O in the
//                              output format after every K/V block (FA-1's characteristic error).
// A State type provides m(a, x), l(a, x), o(a, x): the value as it is kept for the next block.
#pragma once

#include "attention/rows/arith.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

struct NoDequant {
  static constexpr bool kBlockLocalPv = false;
  template <class A>
  ATTNDEV_HD void scores(const A&, int /*row*/, int /*j0*/, typename A::Value*, int) const {}
  template <class A>
  ATTNDEV_HD typename A::Value merge_pv(const A& a, typename A::Value acc, typename A::Value pv,
                                        int /*j0*/) const {
    return a.add(Stage::out_accum, acc, pv);
  }
  template <class A>
  ATTNDEV_HD typename A::Value output(const A&, typename A::Value acc) const {
    return acc;
  }
};

struct RegisterState {
  template <class A>
  ATTNDEV_HD typename A::Value m(const A&, typename A::Value x) const {
    return x;
  }
  template <class A>
  ATTNDEV_HD typename A::Value l(const A&, typename A::Value x) const {
    return x;
  }
  template <class A>
  ATTNDEV_HD typename A::Value o(const A&, typename A::Value x) const {
    return x;
  }
};

struct HbmState {
  template <class A>
  ATTNDEV_HD typename A::Value m(const A& a, typename A::Value x) const {
    return a.round(Stage::stats, x);
  }
  template <class A>
  ATTNDEV_HD typename A::Value l(const A& a, typename A::Value x) const {
    return a.round(Stage::stats, x);
  }
  template <class A>
  ATTNDEV_HD typename A::Value o(const A& a, typename A::Value x) const {
    return a.round(Stage::output, x);
  }
};

}  // namespace attndev::attention::rows
