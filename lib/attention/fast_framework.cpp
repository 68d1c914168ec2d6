// The float fast path under the framework model: every op in fp32, its output stored.
// (fast_kinds.hpp: why the fast path's instantiations are spread over several units.)
#include "attention/fast_items.hpp"

namespace attndev::attention::detail::fast {

template void run_fast_t<float, numerics::Format::fp32, true>(Algorithm, const Problem&, Output&);

}  // namespace attndev::attention::detail::fast
