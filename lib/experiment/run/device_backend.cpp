#include "experiment/run/device_backend.hpp"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

#include "experiment/spec/device_memory.hpp"
#include "io/memory.hpp"

#if ATTNDEV_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace attndev::experiment {

io::Json RanOn::to_json() const {
  return {{"inputs", inputs}, {"golden", golden}, {"variant", variant}, {"metrics", metrics}};
}

RanOn ran_on(Backend run_backend, const Variant& variant, bool inputs_from_file) {
  const std::string run = backend_name(run_backend);
  RanOn r;
  r.inputs = inputs_from_file ? "file" : run;
  r.golden = run;
  r.variant = variant.backend == Backend::cpu ? run : backend_name(variant.backend);
  r.metrics = "cpu";
  return r;
}

namespace {

constexpr const char* kHowToRunOnCpu =
    "; run on the CPU instead with --backend cpu (or \"backend\": \"cpu\" in the config)";

}  // namespace

std::string cuda_backend_missing() {
#if ATTNDEV_HAVE_CUDA
  std::string why;
  if (cuda::cuda_available(why)) return {};
  return "the cuda backend needs a CUDA device (sm_80 or newer), and " + why + kHowToRunOnCpu;
#else
  return std::string(
             "the cuda backend needs attndev built with CUDA (nvcc found at configure "
             "time) and a GPU; this build has no CUDA backend") +
         kHowToRunOnCpu;
#endif
}

namespace {

// The device's memory against this shard's points; nothing to check without a device.
void require_device_memory(const Config& config, const Plan& plan, std::size_t shard_index,
                           std::size_t shard_count) {
#if ATTNDEV_HAVE_CUDA
  std::string why;
  if (!cuda::cuda_available(why)) return;
  const cuda::DeviceInfo device = cuda::device_info();
  std::size_t more = 0;
  const std::vector<DeviceMisfit> misfits = device_misfits(
      config, plan, device.global_memory_bytes, shard_index, shard_count, /*limit=*/3, more);
  if (misfits.empty()) return;
  std::string text = std::to_string(misfits.size() + more) +
                     " point(s) cannot fit in the memory of " + device.describe() + ", " +
                     io::format_bytes(device.global_memory_bytes) + ":";
  for (const DeviceMisfit& m : misfits)
    text += "\n  " + m.point->describe() + ": needs " + io::format_bytes(m.bytes) + " (" +
            m.part.name + " " + io::format_bytes(m.part.bytes) + " + " +
            io::format_bytes(kDeviceReserve) + " for the CUDA context and libraries)";
  if (more) text += "\n  ... and " + std::to_string(more) + " more";
  text += "\nleave those points out (-a seq_len=[...] or a constraint), or run them on the CPU";
  throw io::MemoryError(text);
#else
  (void)config;
  (void)plan;
  (void)shard_index;
  (void)shard_count;
#endif
}

}  // namespace

void require_cuda_backend(const Config& config, const Plan& plan, std::size_t shard_index,
                          std::size_t shard_count) {
  if (config.backend == Backend::cuda) {
    const std::string missing = cuda_backend_missing();
    if (!missing.empty()) throw ConfigError("backend", missing);
#if ATTNDEV_HAVE_CUDA
    const attention::Shape shape =
        plan.points.empty() ? attention::Shape{1, 1, 1, 1, 1} : plan.points.front().shape();
    for (std::size_t v = 0; v < config.variants.size(); ++v) {
      const Variant& x = config.variants[v];
      if (x.backend != Backend::cpu) continue;
      const std::string why = cuda::twin_unsupported_reason(x.algorithm, x.policy, shape, {});
      if (!why.empty()) throw ConfigError("variants[" + std::to_string(v) + "]", why);
    }
#endif
  }
  require_device_memory(config, plan, shard_index, shard_count);
}

measure::InputSource device_drawn(const attention::Shape& shape,
                                  const inputs::Distribution& distribution, std::uint64_t seed) {
#if ATTNDEV_HAVE_CUDA
  return [shape, params = distribution.params(), seed](numerics::Format format) {
    return cuda::draw_inputs_on_device(shape, params, seed, format);
  };
#else
  (void)shape;
  (void)distribution;
  (void)seed;
  return [](numerics::Format) -> attention::Inputs {
    throw std::runtime_error(cuda_backend_missing());
  };
#endif
}

measure::GoldenFn device_golden() {
#if ATTNDEV_HAVE_CUDA
  return [](const attention::Inputs& in, const attention::Options& options) {
    cuda::CudaRunResult r = cuda::golden_on_device(in, options);
    if (r.status != cuda::RunStatus::ok)
      throw std::runtime_error("the golden on the device: " + r.status_text());
    return std::move(r.output);
  };
#else
  return [](const attention::Inputs&, const attention::Options&) -> attention::Output {
    throw std::runtime_error(cuda_backend_missing());
  };
#endif
}

VariantOutcome run_twin_variant(const Variant& variant, const attention::Inputs& inputs,
                                const attention::Options& options) {
  VariantOutcome outcome;
#if ATTNDEV_HAVE_CUDA
  const auto start = std::chrono::steady_clock::now();
  try {
    cuda::CudaRunResult r = cuda::run_twin(variant.algorithm, variant.policy, inputs, options);
    switch (r.status) {
      case cuda::RunStatus::ok:
        outcome.output = std::move(r.output);
        break;
      case cuda::RunStatus::skipped:
        outcome.status = Status::skipped(r.reason);
        return outcome;
      case cuda::RunStatus::failed:
        outcome.status = Status::failed(r.reason);
        return outcome;
    }
  } catch (const std::exception& e) {
    outcome.status = Status::failed(e.what());
    return outcome;
  }
  // Wall time of the whole call (upload, kernel, download), as a cpu row's is of its call.
  outcome.runtime_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
#else
  (void)variant;
  (void)inputs;
  (void)options;
  outcome.status = Status::skipped(cuda_backend_missing());
#endif
  return outcome;
}

}  // namespace attndev::experiment
