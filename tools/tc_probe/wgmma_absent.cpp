// run_wgmma_bf16 where the build has no sm_90a code (CMAKE_CUDA_ARCHITECTURES without 90).
#include "tc_probe/wgmma.hpp"

namespace attndev::tc_probe {

bool run_wgmma_bf16(const std::vector<std::uint8_t>&, const std::vector<std::uint8_t>&,
                    const std::vector<float>&, std::vector<float>&, std::string* why) {
  if (why) *why = "built without sm_90a code (CMAKE_CUDA_ARCHITECTURES has no 90)";
  return false;
}

}  // namespace attndev::tc_probe
