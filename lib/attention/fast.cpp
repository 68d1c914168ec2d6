// The fast paths of baseline, flash1 and flash2: the row functions of rows/ (the same ones the
// generic path runs) in NativeArith<T> with the SIMD kernels of kernels.hpp, T = float when every
// arithmetic stage is fp32 and T = double when every stage is fp64 (fast_kind() in fast_kinds.hpp
// decides). In T, each *_in call of the generic path is one IEEE operation:
//   mul_in/add_in/sub_in/div_in(stats|out_accum)  ->  * + - / in T
//   fma_in(stats) / mac_in(.., fused=true)         ->  std::fma / vector FMA in T
//   exp_in/exp2_in(stats, x)                       ->  exp_f32/exp2_f32 (exp_f64/exp2_f64)
//   R_score, R_prob, R_output                      ->  round_to_bf16/fp16/tf32 on floats (or none)
// and the SIMD kernels keep the order of every sum, so the results are the same bits as the
// generic path (test_fast_path.cpp). This file dispatches a policy to its instantiation (the table
// of fast_kinds.hpp); the work items are in fast_items.hpp, instantiated by the fast_*.cpp units.
#include <cstddef>
#include <iterator>
#include <stdexcept>

#include "attention/detail.hpp"
#include "attention/fast_kinds.hpp"
#include "attention/fp8_attention.hpp"

namespace attndev::attention::detail {

namespace {

// The row of kFastInstances the policy runs on, found by a compile-time walk of the table
// (docs/CONTRIBUTING.md #6: the one place a runtime choice becomes template parameters);
// fast_kind() admits only policies whose row is there, so the throw is unreachable.
template <template <class, numerics::Format, bool> class Run, std::size_t kRow = 0, class... Args>
void dispatch(const FastInstance& want, Args&&... args) {
  if constexpr (kRow == std::size(kFastInstances)) {
    throw std::logic_error("run_fast: a policy without a row in kFastInstances (see fast_kind)");
  } else {
    constexpr FastInstance kInstance = kFastInstances[kRow];
    if (want == kInstance)
      return Run<FastValue<kInstance.kind>, kInstance.stats, kInstance.framework>::go(args...);
    return dispatch<Run, kRow + 1>(want, args...);
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
  dispatch<RunFast>(fast_instance(kind, p.policy), algorithm, p, out);
}

void run_fp8_fast(Algorithm algorithm, const Fp8Problem& f, FastKind kind, Output& out) {
  if (!is_fp8_algorithm(algorithm)) throw std::logic_error("run_fp8_fast: not an fp8 algorithm");
  dispatch<RunFp8>(fast_instance(kind, f.p->policy), algorithm, f, out);
}

}  // namespace attndev::attention::detail
