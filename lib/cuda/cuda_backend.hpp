// The CUDA backend's public face: plain C++, no CUDA header, so the runner, the CLI and the tests
// include it in any build. The functions are defined only when attndev_cuda is built
// (ATTNDEV_HAVE_CUDA); callers guard their use with `#if ATTNDEV_HAVE_CUDA`.
//
// Kernels (see docs/cuda.md):
//   baseline   cuBLAS GEMMs (fp32 or fp64 compute) + a softmax kernel rounding at the policy's
//              stages with lib/numerics, like the emulator's baseline
//   flash1/2   "faithful" scalar kernels: the emulator's order of operations, bit-identical to
//              attention::run on the CPU
//   flash2-tc  tensor-core FA-2 kernel (mma.sync, bf16/fp16 in, fp32 accumulate); not
//              bit-identical: the matrix unit sums in its own order and exp2 is the hardware's
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"

namespace attndev::inputs {
struct DistributionParams;  // inputs/sample.hpp
}

namespace attndev::cuda {

enum class Kernel : unsigned char { baseline, flash1, flash2, flash2_tc };

inline constexpr Kernel kAllKernels[] = {Kernel::baseline, Kernel::flash1, Kernel::flash2,
                                         Kernel::flash2_tc};

inline const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::baseline:
      return "baseline";
    case Kernel::flash1:
      return "flash1";
    case Kernel::flash2:
      return "flash2";
    case Kernel::flash2_tc:
      return "flash2-tc";
  }
  return "?";
}

inline bool parse_kernel(std::string_view text, Kernel& out) {
  for (Kernel k : kAllKernels) {
    if (text == kernel_name(k)) {
      out = k;
      return true;
    }
  }
  if (text == "flash2_tc") {
    out = Kernel::flash2_tc;
    return true;
  }
  return false;
}

// The CUDA kernel that implements an emulator algorithm: baseline/flash1/flash2 map one to one;
// the fp8 algorithms have no CUDA kernel (nullopt: the caller reports "skipped", never a fallback).
inline std::optional<Kernel> kernel_for(attention::Algorithm a) {
  if (a == attention::Algorithm::baseline) return Kernel::baseline;
  if (a == attention::Algorithm::flash1) return Kernel::flash1;
  if (a == attention::Algorithm::flash2) return Kernel::flash2;
  return std::nullopt;
}

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  std::size_t global_memory_bytes = 0;
  int l2_cache_bytes = 0;
  std::string describe() const;  // "NVIDIA H200 (sm_90, 132 SMs, 141 GiB)"
};

// True when a CUDA device this build can run on (sm_80 or newer) is present. Otherwise false,
// with `why` saying what is missing (no driver, no device, too old) in words a user can act on.
bool cuda_available(std::string& why);

// Device 0 (the one every run uses). Throws std::runtime_error when no device is present.
DeviceInfo device_info();

// What each kernel of this build covers, from the dispatch table (for `attndev list`).
struct KernelInfo {
  Kernel kernel;
  std::string covers;
};
std::vector<KernelInfo> kernel_catalog();

struct TimingOptions {
  bool enabled = false;  // false: run once, no timing (deviation studies)
  int warmup = 2;        // untimed launches before the repeats
  int repeats = 10;      // timed launches; the median is reported
  bool flush_l2 = true;  // overwrite an L2-sized buffer before each repeat (cold-cache timing)
};

enum class RunStatus : unsigned char { ok, skipped, failed };

struct CudaRunResult {
  RunStatus status = RunStatus::failed;
  std::string reason;        // why skipped/failed; empty when ok
  attention::Output output;  // (B, H, N_q, d) in the policy's output format; lse where produced
  double runtime_ms = -1;    // median over repeats; -1 when not timed
  double tflops = -1;        // attention::forward_flops / runtime; -1 when not timed

  // "ok", "skipped: <reason>", "failed: <reason>" — the results table's status column.
  std::string status_text() const;
};

// Empty when `kernel` can run this policy/shape/options on a GPU, else the reason it cannot
// (e.g. "flash2-tc: head_dim 96 not instantiated (have 64, 128)"). The same function that picks
// the template instantiation answers this (dispatch.hpp), so the answer and the launch agree.
// Needs no device.
std::string unsupported_reason(Kernel kernel, const numerics::PrecisionPolicy& policy,
                               const attention::Shape& shape, const attention::Options& options);

// Runs one attention forward pass on device 0. Shape errors throw std::invalid_argument (the
// same checks as attention::run); an unsupported combination returns `skipped`, never a silent
// fallback to another kernel; a CUDA error returns `failed` with the error and its file:line.
CudaRunResult run_cuda(Kernel kernel, const numerics::PrecisionPolicy& policy,
                       const attention::Inputs& inputs, const attention::Options& options,
                       const TimingOptions& timing = {});

// ---- The run-level cuda backend: inputs, golden and emulated twins on the device ----
//
// These run the emulator's own code on the device (the generator's per-element function, the row
// functions of lib/attention/rows), so their results equal the CPU's: inputs and O bit for bit;
// lse within the last bits of log(), which libdevice and glibc compute differently.

// Empty when the emulator's `algorithm` under `policy` runs on the device (dispatch.hpp's
// select_twin), else why not. Needs no device.
std::string twin_unsupported_reason(attention::Algorithm algorithm,
                                    const numerics::PrecisionPolicy& policy,
                                    const attention::Shape& shape,
                                    const attention::Options& options);

// attention::run(algorithm, policy, inputs, options) on device 0: the same validation and input
// stage, the row functions in a faithful kernel, one thread per query row. Unsupported ->
// skipped (never a fallback); a CUDA error -> failed.
CudaRunResult run_twin(attention::Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                       const attention::Inputs& inputs, const attention::Options& options,
                       const TimingOptions& timing = {});

// The FP64 golden on the device: run_twin(baseline, the fp64 policy), the streamed baseline row
// (rows::baseline_row_streamed), whose memory is O(N d): N = 131072 at d = 128 fits.
CudaRunResult golden_on_device(const attention::Inputs& inputs, const attention::Options& options,
                               const TimingOptions& timing = {});

// inputs::make_inputs(shape, dist, seed, format), drawn on device 0 by the generator's
// per-element function and copied back. Throws std::invalid_argument for a shape make_inputs
// refuses, std::runtime_error for a CUDA error or a missing device.
attention::Inputs draw_inputs_on_device(const attention::Shape& shape,
                                        const inputs::DistributionParams& dist, std::uint64_t seed,
                                        numerics::Format format);

// Free and total memory of device 0 (cudaMemGetInfo). Throws std::runtime_error without one.
struct DeviceMemory {
  std::size_t free_bytes = 0, total_bytes = 0;
};
DeviceMemory device_memory();

// The dense matmul rate of this GPU: cuBLAS C(m,n) = A(m,k) B(k,n) in `input` (bf16 or fp16)
// with fp32 accumulation, timed like run_cuda. The yardstick for flash2-tc's throughput.
struct GemmRate {
  double runtime_ms = -1;
  double tflops = -1;
};
GemmRate measure_gemm_rate(numerics::Format input, int m, int n, int k,
                           const TimingOptions& timing);

}  // namespace attndev::cuda
