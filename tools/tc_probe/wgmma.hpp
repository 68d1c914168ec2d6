// wgmma m64n8k16 .f32.bf16.bf16 on the device (wgmma.cu, built for sm_90a only). Host-callable
// from the probe; where the build has no sm_90a code it answers false with the reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attndev::tc_probe {

// a: cases x (64, 16) bf16 bits as bytes, row-major; bt: cases x (8, 16) (B's columns as rows);
// c: cases x (64, 8). d receives D. False (and *why) when the probe cannot run wgmma.
bool run_wgmma_bf16(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& bt,
                    const std::vector<float>& c, std::vector<float>& d, std::string* why);

}  // namespace attndev::tc_probe
