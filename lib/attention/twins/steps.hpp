// The two parts of a kernel twin that no kernel source fixes, each pluggable:
//
//   MmaChain  the GEMM step: one output element of D = A B + C as the kernel's matrix
//             instructions compute it, a chain over k in increasing order, each instruction's D
//             the next one's C. The tensor cores add as a fused block dot-add whose width and
//             truncation depend on the architecture; without a tensor-core profile in the policy
//             the chain is today's arithmetic, one fp32 FMA per product in k order
//             (FmaChain).
//   Exp2      the device's exp2f. FlashAttention-2 is built with --use_fast_math (exp2f becomes
//             ex2.approx.ftz.f32) and PyTorch's copies call exp2f (libdevice, itself ex2.approx);
//             neither is specified to the bit. The project's exp2 (numerics::exp2_f32) until a
//             table measured on a device is loaded (twins/exp2_table.hpp).
//
// Both are run-time objects (a twin runs once per point, on the host): an indirect call per
// output element or per exponential costs little beside the chain it computes.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <string>

#include "numerics/math.hpp"

namespace attndev::attention::twins {

struct MmaChain {
  virtual ~MmaChain() = default;
  // sum_i a[i*sa] * b[i*sb] + c over i = 0..n-1 as the instructions add it: a and b hold values
  // of the input format (exact in double), c and the result fp32. n need not be a multiple of the
  // instruction's k: the kernels pad with zero rows (zero-filled tiles), which add nothing.
  virtual float chain(const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb, int n,
                      float c) const = 0;
  virtual std::string name() const = 0;
};

// One fp32 fused multiply-add per product in k order (fused = false: the product rounded, then
// the sum): the CUDA-core loop every non-tensor-core kernel model of attndev uses.
struct FmaChain final : MmaChain {
  bool fused = true;
  explicit FmaChain(bool fused_products = true) : fused(fused_products) {}
  float chain(const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb, int n,
              float c) const override {
    for (int i = 0; i < n; ++i) {
      const float x = static_cast<float>(a[i * sa]), y = static_cast<float>(b[i * sb]);
      c = fused ? std::fma(x, y, c) : c + x * y;
    }
    return c;
  }
  std::string name() const override { return fused ? "fp32-fma" : "fp32-mul-add"; }
};

// exp2 as a twin evaluates it (the alias flash2_tc.hpp declares too).
using Exp2 = std::function<float(float)>;

// The project's exp2 (lib/numerics/math.hpp): what every twin uses until a device table exists.
inline Exp2 project_exp2() {
  return [](float x) { return numerics::exp2_f32(x); };
}

}  // namespace attndev::attention::twins
