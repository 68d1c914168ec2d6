// The fast paths of baseline, flash1 and flash2: the row functions of rows/ (the same ones the
// generic path runs) in NativeArith<T> with the SIMD kernels of kernels.hpp, T = float when every
// arithmetic stage is fp32 and T = double when every stage is fp64 (fast_kind() in attention.cpp
// decides). In T, each *_in call of the generic path is one IEEE operation:
//   mul_in/add_in/sub_in/div_in(stats|out_accum)  ->  * + - / in T
//   fma_in(stats) / mac_in(.., fused=true)         ->  std::fma / vector FMA in T
//   exp_in/exp2_in(stats, x)                       ->  exp_f32/exp2_f32 (exp_f64/exp2_f64)
//   R_score, R_prob, R_output                      ->  round_to_bf16/fp16/tf32 on floats (or none)
// and the SIMD kernels keep the order of every sum, so the results are the same bits as the
// generic path (test_fast_path.cpp). This file dispatches a policy to its instantiation; the work
// items are in fast_items.hpp, instantiated by the fast_*.cpp units (fast_kinds.hpp).
#include <stdexcept>

#include "attention/detail.hpp"
#include "attention/fast_kinds.hpp"
#include "attention/fp8_attention.hpp"

namespace attndev::attention::detail {

namespace {

// One instantiation per (value type, stats format, rounding model) the fast path has
// (docs/CONTRIBUTING.md #6: the one place a runtime choice becomes a template parameter);
// fast_kind() admitted only these.
template <template <class, numerics::Format, bool> class Run, class... Args>
void dispatch(FastKind kind, const numerics::PrecisionPolicy& policy, Args&&... args) {
  if (kind == FastKind::f64) {
    // fp64 arithmetic; the kernel model's statistics may be narrower (their operations exact,
    // numerics::fixed, as on the float path).
    switch (policy.model == numerics::Model::framework ? numerics::Format::fp64 : policy.stats) {
      case numerics::Format::fp64:
        return Run<double, numerics::Format::fp64, false>::go(args...);
      case numerics::Format::bf16:
        return Run<double, numerics::Format::bf16, false>::go(args...);
      case numerics::Format::fp16:
        return Run<double, numerics::Format::fp16, false>::go(args...);
      case numerics::Format::tf32:
        return Run<double, numerics::Format::tf32, false>::go(args...);
      default:
        throw std::logic_error("run_fast: stats format without a fast path (see fast_kind)");
    }
  }
  // The framework model computes every stage in fp32: no narrow arithmetic.
  if (policy.model == numerics::Model::framework)
    return Run<float, numerics::Format::fp32, true>::go(args...);
  switch (policy.stats) {
    case numerics::Format::fp32:
      return Run<float, numerics::Format::fp32, false>::go(args...);
    case numerics::Format::bf16:
      return Run<float, numerics::Format::bf16, false>::go(args...);
    case numerics::Format::fp16:
      return Run<float, numerics::Format::fp16, false>::go(args...);
    case numerics::Format::tf32:
      return Run<float, numerics::Format::tf32, false>::go(args...);
    default:
      throw std::logic_error("run_fast: stats format without a fast path (see fast_kind)");
  }
}

template <class T, numerics::Format kStats, bool kFramework>
struct RunFast {
  static void go(Algorithm algorithm, const Problem& p, Output& out) {
    fast::run_fast_t<T, kStats, kFramework>(algorithm, p, out);
  }
};
template <class T, numerics::Format kStats, bool kFramework>
struct RunFp8 {
  static void go(Algorithm algorithm, const Fp8Problem& f, Output& out) {
    if constexpr (kFramework)
      throw std::logic_error("run_fp8_fast: the fp8 algorithms have no framework model");
    else
      fast::run_fp8_t<T, kStats, kFramework>(algorithm, f, out);
  }
};

}  // namespace

void run_fast(Algorithm algorithm, const Problem& p, FastKind kind, Output& out) {
  if (algorithm != Algorithm::baseline && algorithm != Algorithm::flash1 &&
      algorithm != Algorithm::flash2)
    throw std::logic_error("run_fast: no fast path for this algorithm (see fast_kind)");
  dispatch<RunFast>(kind, p.policy, algorithm, p, out);
}

void run_fp8_fast(Algorithm algorithm, const Fp8Problem& f, FastKind kind, Output& out) {
  if (!is_fp8_algorithm(algorithm)) throw std::logic_error("run_fp8_fast: not an fp8 algorithm");
  dispatch<RunFp8>(kind, f.p->policy, algorithm, f, out);
}

}  // namespace attndev::attention::detail
