// The float fast path under the kernel model: fp32 arithmetic, statistics fp32/bf16/fp16/tf32.
// (fast_kinds.hpp: why the fast path's instantiations are spread over several units.)
#include "attention/fast_items.hpp"

namespace attndev::attention::detail::fast {

#define ATTNDEV_INSTANTIATE(T, S, F) \
  template void run_fast_t<T, S, F>(Algorithm, const Problem&, Output&);
ATTNDEV_FAST_KERNEL_KINDS_F32(ATTNDEV_INSTANTIATE)
#undef ATTNDEV_INSTANTIATE

}  // namespace attndev::attention::detail::fast
