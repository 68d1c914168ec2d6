// run_cuda and friends: validation, device discovery, upload, dispatch (through select() in
// dispatch.hpp, the only place a kernel instantiation is chosen), timing, download.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "attention/fp8_attention.hpp"
#include "attention/problem.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.cuh"
#include "cuda/dispatch.hpp"
#include "cuda/launch.cuh"
#include "cuda/timing.cuh"
#include "numerics/round.hpp"

namespace attndev::cuda {

namespace {

constexpr int kMinSmMajor = 8;  // mma.sync bf16, cp.async, ldmatrix: sm_80 and newer

// Chooses the launcher for the selected tag (the tag is the instantiation; this only routes it).
struct PrepareVisitor {
  const DeviceProblem& problem;
  const attention::Problem& staged;  // the emulator's input stage, on the host
  const attention::Options& options;
  std::optional<Prepared>& out;
  template <class Tag>
  void operator()(Tag) const {
    if constexpr (requires { Tag::kAlgorithm; }) {
      if constexpr (attention::is_fp8_algorithm(Tag::kAlgorithm)) {
        // The CPU's own preparation (quantization, the Hadamard rotation) and its refusals: the
        // twin differs from attention::run only in where the rows run.
        attention::detail::require_fp8_policy(Tag::kAlgorithm, staged.policy);
        const attention::detail::Fp8Problem f =
            attention::detail::prepare_fp8(Tag::kAlgorithm, staged, options.fp8);
        out = prepare_faithful_fp8<Tag::kAlgorithm>(problem, f.q, f.k, f.v);
      } else {
        out = prepare_faithful<Tag::kAlgorithm>(problem);
      }
    } else if constexpr (requires { Tag::kHeadDim; }) {
      out = prepare_flash2_tc(TcKey::of<Tag>(), problem);
    } else {
      out = prepare_baseline<Tag::kElement>(problem);
    }
  }
};

}  // namespace

std::string DeviceInfo::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.0f GiB)", name.c_str(), sm_major, sm_minor,
                multiprocessors,
                static_cast<double>(global_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string CudaRunResult::status_text() const {
  switch (status) {
    case RunStatus::ok:
      return "ok";
    case RunStatus::skipped:
      return "skipped: " + reason;
    case RunStatus::failed:
      return "failed: " + reason;
  }
  return "failed: unknown status";
}

bool cuda_available(std::string& why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error so later calls report their own
    return false;
  }
  if (count == 0) {
    why = "no CUDA device found";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    why = "cannot query CUDA device 0";
    return false;
  }
  if (prop.major < kMinSmMajor) {
    why = std::string(prop.name) + " is sm_" + std::to_string(prop.major) +
          std::to_string(prop.minor) + "; the CUDA kernels need sm_80 or newer";
    return false;
  }
  why.clear();
  return true;
}

DeviceInfo device_info() {
  std::string why;
  if (!cuda_available(why)) throw std::runtime_error(why);
  cudaDeviceProp prop{};
  ATTNDEV_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  DeviceInfo info;
  info.index = 0;
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.global_memory_bytes = prop.totalGlobalMem;
  info.l2_cache_bytes = prop.l2CacheSize;
  return info;
}

std::vector<KernelInfo> kernel_catalog() {
  std::string tc;
  for (MatElement e : {MatElement::bf16, MatElement::fp16})
    for (int d : {64, 128}) {
      const std::string tiles = detail::tc_tiles_for(e, d);
      if (tiles.empty()) continue;
      if (!tc.empty()) tc += "; ";
      tc += std::string(mat_element_name(e)) + " d=" + std::to_string(d) + " Br x Bc " + tiles;
    }
  return {
      {Kernel::baseline,
       "cuBLAS GEMMs (bf16/fp16/fp32/tf32/fp64 inputs) + softmax rounding at "
       "the policy's stages; prob == input, one accumulator format"},
      {Kernel::flash1,
       "faithful scalar kernel: any policy and tile, bit-identical to the emulator"},
      {Kernel::flash2,
       "faithful scalar kernel: any policy and tile, bit-identical to the emulator"},
      {Kernel::flash2_tc, "tensor cores, kernel-bf16/kernel-fp16 only: " + tc},
  };
}

std::string unsupported_reason(Kernel kernel, const numerics::PrecisionPolicy& policy,
                               const attention::Shape& shape, const attention::Options& options) {
  return check_supported(kernel, policy, shape, options).reason;
}

namespace {

// One forward pass on device 0 of whatever `select_with(visitor)` chooses (select() for the
// kernels, select_twin() for the emulated twins): the emulator's validation and input stage,
// upload, launch (timed or not), download.
template <class SelectWith>
CudaRunResult run_selected(SelectWith&& select_with, const numerics::PrecisionPolicy& policy,
                           const attention::Inputs& inputs, const attention::Options& options,
                           const TimingOptions& timing) {
  attention::validate(inputs, options);  // the emulator's checks: a config fails alike on both
  const attention::Shape shape = inputs.shape();
  CudaRunResult result;
  const Selection support = select_with([](auto) {});
  if (!support.supported) {
    result.status = RunStatus::skipped;
    result.reason = support.reason;
    return result;
  }
  std::string why;
  if (!cuda_available(why)) {
    result.status = RunStatus::skipped;
    result.reason = why;
    return result;
  }

  try {
    // The emulator's input stage: the same rounded Q, K, V and the same scales.
    const attention::Problem staged = attention::make_problem(policy, inputs, options);
    const std::vector<double>& q_host = staged.q.data;
    const std::vector<double>& k_host = staged.k.data;
    const std::vector<double>& v_host = staged.v.data;
    const std::size_t o_count = inputs.q.data.size();
    const std::size_t rows = static_cast<std::size_t>(shape.batch) * shape.heads * shape.seq_q;
    DeviceBuffer<double> q(q_host.size()), k(k_host.size()), v(v_host.size());
    DeviceBuffer<double> o(o_count), lse(rows);
    q.upload(q_host.data(), q_host.size());
    k.upload(k_host.data(), k_host.size());
    v.upload(v_host.data(), v_host.size());

    DeviceProblem problem{q.get(),
                          k.get(),
                          v.get(),
                          o.get(),
                          lse.get(),
                          shape,
                          options,
                          policy,
                          /*scale_scores=*/!staged.scale_in_query,
                          staged.scale,
                          staged.row_params()};
    std::optional<Prepared> prepared;
    select_with(PrepareVisitor{problem, staged, options, prepared});
    if (!prepared) throw std::logic_error("dispatch selected no launcher");

    if (timing.enabled) {
      result.runtime_ms = median_launch_ms(prepared->launch, timing);
      const double flops = attention::forward_flops(shape, options.causal);
      result.tflops = flops / (result.runtime_ms * 1e-3) / 1e12;
    } else {
      prepared->launch();
    }
    prepared->finish();
    ATTNDEV_CUDA_CHECK(cudaDeviceSynchronize());

    result.output.o = attention::Tensor(shape.batch, shape.heads, shape.seq_q, shape.head_dim);
    o.download(result.output.o.data.data(), o_count);
    result.output.lse.resize(rows);
    lse.download(result.output.lse.data(), rows);
    result.status = RunStatus::ok;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    result = CudaRunResult{};
    result.status = RunStatus::failed;
    result.reason = e.what();
    cudaGetLastError();
  }
  return result;
}

}  // namespace

CudaRunResult run_cuda(Kernel kernel, const numerics::PrecisionPolicy& policy,
                       const attention::Inputs& inputs, const attention::Options& options,
                       const TimingOptions& timing) {
  const attention::Shape shape = inputs.shape();
  return run_selected([&](auto&& visit) { return select(kernel, policy, shape, options, visit); },
                      policy, inputs, options, timing);
}

std::string twin_unsupported_reason(attention::Algorithm algorithm,
                                    const numerics::PrecisionPolicy& policy,
                                    const attention::Shape& shape,
                                    const attention::Options& options) {
  return check_twin_supported(algorithm, policy, shape, options).reason;
}

CudaRunResult run_twin(attention::Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                       const attention::Inputs& inputs, const attention::Options& options,
                       const TimingOptions& timing) {
  // The emulator's own refusals first, as attention::run makes them: a twin fails where the CPU
  // fails, with its words.
  attention::validate(inputs, options);
  const attention::Shape shape = inputs.shape();
  if (const std::string why = attention::unsupported_reason(algorithm, policy, shape); !why.empty())
    throw std::invalid_argument(why);
  return run_selected(
      [&](auto&& visit) { return select_twin(algorithm, policy, shape, options, visit); }, policy,
      inputs, options, timing);
}

CudaRunResult golden_on_device(const attention::Inputs& inputs, const attention::Options& options,
                               const TimingOptions& timing) {
  return run_twin(attention::Algorithm::baseline, numerics::kGoldenPolicy, inputs, options, timing);
}

DeviceMemory device_memory() {
  std::string why;
  if (!cuda_available(why)) throw std::runtime_error(why);
  DeviceMemory m;
  ATTNDEV_CUDA_CHECK(cudaMemGetInfo(&m.free_bytes, &m.total_bytes));
  return m;
}

}  // namespace attndev::cuda
