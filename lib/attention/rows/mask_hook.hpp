// The mask hook of the row functions: masks beyond the causal one (key padding, attention masks,
// additive biases, as PyTorch's scaled_dot_product_attention takes them), in the manner of the
// Dequant and State hooks (rows/hooks.hpp).
//
// A mask is an additive bias on the scaled scores, S_ij + bias_ij, with bias_ij = -inf for a key
// that row i may not see (a boolean mask keeps True: 0 / -inf). The row functions ask the hook
// two things per (row, K/V block), after the causal rule has chosen the block's keys [j0, j0+n):
//   keys(i, j0, n)            how many of them the row takes: n without its trailing masked keys,
//                             so a row visits no key after its last visible one and a block whose
//                             keys are all masked is skipped (count 0), as the causal mask skips
//                             them. A kernel runs those keys with -inf scores instead; the skip
//                             gives the same values, because such keys only add exact zeros
//                             (p = 0, and a block without a visible key rescales by
//                             exp(0) = 1: rows/flash2.hpp)
//   scores(a, p, raw, i, j0, s, n)
//                             the bias added to the block's scores before they are rounded to
//                             the score format: s_j = -inf where bias = -inf, unchanged where
//                             bias = 0 (an exact no-op, so a zero bias never turns -0 into +0),
//                             else s_j = s_j + bias in score_accum (a framework's `S += mask`,
//                             stored). `raw`: the scores are not scaled yet (FA-2's kernel form,
//                             whose scale lives in exp2): the bias is divided by the scale first,
//                             in score_accum, as FA-2 divides its ALiBi slopes by softmax_scale so
//                             that they apply to raw scores. The bias arrives as a value of
//                             score_accum's compute format (attention/mask.hpp rounds it once),
//                             so every arithmetic model holds it exactly.
// Masked keys inside the visited range keep their place in every sum (their p are exact zeros),
// so the order of the other keys' terms is the unmasked one: with right padding, a padded
// sequence gives the bits of the unpadded one wherever the summation order does not depend on
// the padded length (docs/python.md names where it does).
//
//   NoMask    nothing beyond the causal mask: the default of every row function (the CUDA kernels
//             and the row functions' other callers never see a mask)
//   KeyMask   one (batch, head)'s rows of a dense bias (attention/mask.hpp builds it); a null
//             one is NoMask at the cost of one test per row and block
#pragma once

#include <cmath>

#include "attention/rows/arith.hpp"
#include "attention/rows/params.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

struct NoMask {
  ATTNDEV_HD int keys(int /*row*/, int /*j0*/, int n) const { return n; }
  template <class A>
  ATTNDEV_HD void scores(const A&, const Params&, bool /*raw*/, int /*row*/, int /*j0*/,
                         typename A::Value*, int) const {}
};

struct KeyMask {
  // bias(i, j) = data[i * row_stride + j * col_stride]; stride 0 broadcasts one row over every
  // query, or one value over every key. Null: no mask.
  const double* data = nullptr;
  long row_stride = 0;
  long col_stride = 1;

  ATTNDEV_HD double bias(int i, int j) const {
    return data[static_cast<long>(i) * row_stride + static_cast<long>(j) * col_stride];
  }
  ATTNDEV_HD int keys(int i, int j0, int n) const {
    if (data == nullptr) return n;
    while (n > 0 && bias(i, j0 + n - 1) == -static_cast<double>(INFINITY)) --n;
    return n;
  }
  template <class A>
  ATTNDEV_HD void scores(const A& a, const Params& p, bool raw, int i, int j0, typename A::Value* s,
                         int n) const {
    using T = typename A::Value;
    if (data == nullptr) return;
    for (int j = 0; j < n; ++j) {
      const double b = bias(i, j0 + j);
      if (b == 0.0) continue;
      if (b == -static_cast<double>(INFINITY)) {
        s[j] = -static_cast<T>(INFINITY);
        continue;
      }
      T add = static_cast<T>(b);
      if (raw) add = a.div(Held{Stage::score_accum}, add, static_cast<T>(p.score_scale));
      s[j] = a.add(Stage::score_accum, s[j], add);
    }
  }
};

}  // namespace attndev::attention::rows
