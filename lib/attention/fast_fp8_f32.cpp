// FA-3's fp8 algorithms on the float fast path (kernel model).
// (lib/attention/CMakeLists.txt says why the instantiations are spread over several units.)
#include "attention/fast_items.hpp"

namespace attndev::attention::detail::fast {

#define ATTNDEV_INSTANTIATE(T, S, F)                                                    \
  ATTNDEV_FAST_KERNEL_MODEL_ONLY(F, template void run_fp8_t<T, numerics::Format::S, F>( \
                                        Algorithm, const Fp8Problem&, Output&);)
ATTNDEV_FAST_INSTANCES_F32(ATTNDEV_INSTANTIATE)
#undef ATTNDEV_INSTANTIATE

}  // namespace attndev::attention::detail::fast
