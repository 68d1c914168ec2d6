// The float fast path: the kernel model (fp32 arithmetic, statistics fp32/bf16/fp16/tf32) and the
// framework model (every op in fp32, its output stored). The framework instantiation stays in this
// unit: compiled alone it ran 5-10% slower (bench, framework-bf16, N=2048), the float helpers
// it shares with the kernel model inlined differently.
// (lib/attention/CMakeLists.txt says why the instantiations are spread over several units.)
#include "attention/fast_items.hpp"

namespace attndev::attention::detail::fast {

#define ATTNDEV_INSTANTIATE(T, S, F) \
  template void run_fast_t<T, numerics::Format::S, F>(Algorithm, const Problem&, Output&);
ATTNDEV_FAST_INSTANCES_F32(ATTNDEV_INSTANTIATE)
#undef ATTNDEV_INSTANTIATE

}  // namespace attndev::attention::detail::fast
