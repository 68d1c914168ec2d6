// The double fast path: fp64 arithmetic, statistics fp64 or exact-then-rounded bf16/fp16/tf32.
// (lib/attention/CMakeLists.txt says why the instantiations are spread over several units.)
#include "attention/fast_items.hpp"

namespace attndev::attention::detail::fast {

#define ATTNDEV_INSTANTIATE(T, S, F) \
  template void run_fast_t<T, numerics::Format::S, F>(Algorithm, const Problem&, Output&);
ATTNDEV_FAST_INSTANCES_F64(ATTNDEV_INSTANTIATE)
#undef ATTNDEV_INSTANTIATE

}  // namespace attndev::attention::detail::fast
