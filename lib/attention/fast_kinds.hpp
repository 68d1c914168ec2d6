// The fast path's instantiations: one per (value type, statistics format, rounding model) that
// fast_kind() (attention.cpp) admits. Declared here, defined in fast_items.hpp and instantiated
// explicitly by the fast_*.cpp units; fast.cpp dispatches to them without seeing their
// definitions, so nothing is instantiated twice.
#pragma once

#include "attention/detail.hpp"
#include "numerics/format.hpp"

namespace attndev::attention::detail {

struct Fp8Problem;

namespace fast {

template <class T, numerics::Format kStats, bool kFramework>
void run_fast_t(Algorithm algorithm, const Problem& p, Output& out);

// fp8 algorithms model FA-3's kernel: the kernel model only (run() refuses the framework model).
template <class T, numerics::Format kStats, bool kFramework>
void run_fp8_t(Algorithm algorithm, const Fp8Problem& f, Output& out);

}  // namespace fast
}  // namespace attndev::attention::detail

// X(T, STATS, FRAMEWORK) for every kernel-model combination of one value type (fp32 statistics
// are the float path's own; the double path's widest statistics are fp64).
#define ATTNDEV_FAST_KERNEL_KINDS_F32(X)             \
  X(float, ::attndev::numerics::Format::fp32, false) \
  X(float, ::attndev::numerics::Format::bf16, false) \
  X(float, ::attndev::numerics::Format::fp16, false) \
  X(float, ::attndev::numerics::Format::tf32, false)
#define ATTNDEV_FAST_KERNEL_KINDS_F64(X)              \
  X(double, ::attndev::numerics::Format::fp64, false) \
  X(double, ::attndev::numerics::Format::bf16, false) \
  X(double, ::attndev::numerics::Format::fp16, false) \
  X(double, ::attndev::numerics::Format::tf32, false)
