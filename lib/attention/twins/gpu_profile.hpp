// What a twin needs to know of the GPU its kernel ran on, besides the tensor cores' arithmetic:
// the launch decisions that the kernels' host code takes from the device.
//
//   sms          cudaDeviceProp::multiProcessorCount: FlashAttention-2 splits the K/V sequence
//                over several CTAs when batch x heads x query blocks would not fill the GPU
//                (num_splits_heuristic in csrc/flash_attn/flash_api.cpp, which PyTorch's
//                aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp copies), and
//                the split changes the arithmetic (a second kernel combines the splits).
//   sm8x         compute capability 8.x with x > 0 (Ada, consumer Ampere): FA-2's tile sizes for
//                head dims 96 and 128 differ there (run_mha_fwd_hdim96/128 in
//                csrc/flash_attn/src/flash_fwd_launch_template.h).
//   hdim256_wide FA-2's head dim 256 takes 128 x 64 tiles with 8 warps when a block may use
//                2 * 256 * (128 + 2 * 64) bytes of shared memory and an SM has less than
//                4 * 256 * (64 + 2 * 64) (run_mha_fwd_hdim256), else 64 x 64.
//
// The names are the tensor-core profiles' (sm80, sm89, sm90, sm100): a twin run under a policy
// with a tensor-core profile takes the profile's GPU; without one, sm80's.
#pragma once

#include <string>
#include <string_view>

namespace attndev::attention::twins {

struct GpuProfile {
  std::string_view name;
  std::string_view example;  // the GPU whose figures these are
  int sms = 0;
  bool sm8x = false;
  bool hdim256_wide = false;
};

// SM counts: NVIDIA's product specifications (A100 SXM 108, RTX 4090 128, H100 SXM and H200
// 132, B200 148); shared memory per block (opt-in) / per SM: 163 / 164 KiB (sm_80), 99 / 100 KiB
// (sm_89), 227 / 228 KiB (sm_90, sm_100), CUDA C Programming Guide, "Compute capabilities".
inline constexpr GpuProfile kGpuProfiles[] = {
    {"sm80", "A100 SXM", 108, false, true},
    {"sm89", "RTX 4090", 128, true, false},
    {"sm90", "H100 SXM / H200", 132, false, false},
    {"sm100", "B200", 148, false, false},
};

inline const GpuProfile* find_gpu_profile(std::string_view name) {
  for (const GpuProfile& g : kGpuProfiles)
    if (g.name == name) return &g;
  return nullptr;
}

inline const GpuProfile& default_gpu_profile() {
  return kGpuProfiles[0];
}

}  // namespace attndev::attention::twins
