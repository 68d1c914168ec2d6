#include "experiment/variant_runner.hpp"

#include <chrono>
#include <exception>
#include <optional>
#include <utility>

#if ATTNDEV_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace attndev::experiment {

bool tile_independent(const Variant& variant) {
  return variant.algorithm == attention::Algorithm::baseline;
}

VariantOutcome run_variant(const Variant& variant, const attention::Inputs& inputs,
                           const attention::Options& options) {
  VariantOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    switch (variant.backend) {
      case Backend::cpu:
        outcome.output = attention::run(variant.algorithm, variant.policy, inputs, options);
        break;
      case Backend::cuda: {
#if ATTNDEV_HAVE_CUDA
        // lib/cuda answers "skipped: <why>" for a missing device or an unsupported (algorithm,
        // policy, shape, tile), so such rows never count as compared. GPU time from CUDA events.
        cuda::TimingOptions timing;
        timing.enabled = true;
        timing.warmup = 1;
        timing.repeats = 3;
        const std::optional<cuda::Kernel> kernel = cuda::kernel_for(variant.algorithm);
        if (!kernel) {
          outcome.status = std::string("skipped: no CUDA kernel for ") +
                           attention::algorithm_name(variant.algorithm);
          return outcome;
        }
        cuda::CudaRunResult r = cuda::run_cuda(*kernel, variant.policy, inputs, options, timing);
        if (r.status != cuda::RunStatus::ok) {
          outcome.status = r.status_text();
          return outcome;
        }
        outcome.output = std::move(r.output);
        outcome.runtime_ms = r.runtime_ms;
        return outcome;
#else
        outcome.status = "skipped: CUDA backend not built";
        return outcome;
#endif
      }
    }
  } catch (const std::exception& e) {
    outcome.status = std::string("failed: ") + e.what();
    return outcome;
  }
  outcome.runtime_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

}  // namespace attndev::experiment
