#include "experiment/run/variant_runner.hpp"

#include <chrono>
#include <exception>
#include <optional>
#include <utility>

#include "experiment/run/external.hpp"
#include "experiment/run/external_worker.hpp"

#if ATTNDEV_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace attndev::experiment {

bool tile_independent(const Variant& variant) {
  if (variant.external) return !variant.external->tile_dependent;
  // A twin takes its kernel's own tiles, whatever the point's Br and Bc.
  return variant.algorithm == attention::Algorithm::baseline ||
         attention::is_twin_algorithm(variant.algorithm) ||
         (variant.block_r.has_value() && variant.block_c.has_value());
}

namespace {

VariantOutcome run_cuda_variant(const Variant& variant, const attention::Inputs& inputs,
                                const attention::Options& options) {
  VariantOutcome outcome;
#if ATTNDEV_HAVE_CUDA
  // lib/cuda answers "skipped: <why>" for a missing device or an unsupported (kernel, policy,
  // shape, tile), so such rows never count as compared. GPU time from CUDA events.
  std::optional<cuda::Kernel> kernel;
  if (variant.kernel.empty()) {
    kernel = cuda::kernel_for(variant.algorithm);
  } else {
    cuda::Kernel k;
    if (cuda::parse_kernel(variant.kernel, k)) kernel = k;
  }
  if (!kernel) {
    outcome.status = Status::skipped("no CUDA kernel for " + variant_algorithm_name(variant));
    return outcome;
  }
  cuda::TimingOptions timing;
  timing.enabled = true;
  timing.warmup = 1;
  timing.repeats = 3;
  cuda::CudaRunResult r = cuda::run_cuda(*kernel, variant.policy, inputs, options, timing);
  switch (r.status) {
    case cuda::RunStatus::ok:
      outcome.output = std::move(r.output);
      outcome.runtime_ms = r.runtime_ms;
      break;
    case cuda::RunStatus::skipped:
      outcome.status = Status::skipped(r.reason);
      break;
    case cuda::RunStatus::failed:
      outcome.status = Status::failed(r.reason);
      break;
  }
#else
  (void)inputs;
  (void)options;
  outcome.status = Status::skipped("CUDA backend not built (" + variant_algorithm_name(variant) +
                                   " needs nvcc at configure time and a GPU)");
#endif
  return outcome;
}

}  // namespace

VariantOutcome run_variant(const Variant& variant, const attention::Inputs& inputs,
                           const attention::Options& options, const ExternalContext* external) {
  VariantOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    switch (variant.backend) {
      case Backend::cpu: {
        // A combination the algorithm cannot run (a recipe on a profile without its
        // instructions, a head dim its blocks cannot tile) or a twin asked for a head dim or policy
        // its kernel does not have: a skipped row with the reason, never a failure.
        const std::string why = attention::unsupported_reason(
            variant.algorithm, variant.policy, inputs.shape(), options.block_r, options.block_c);
        if (!why.empty()) {
          outcome.status = Status::skipped(why);
          return outcome;
        }
        outcome.output = attention::run(variant.algorithm, variant.policy, inputs, options);
        break;
      }
      case Backend::cuda:
        return run_cuda_variant(variant, inputs, options);
      case Backend::external: {
        if (!external || !variant.external) {
          outcome.status = Status::failed(
              "an external variant runs only inside a sweep (attndev run) or attndev match");
          return outcome;
        }
        ExternalResult r =
            variant.external->worker
                ? run_worker_point(*variant.external, variant.name, variant.policy.input, *external,
                                   inputs.shape())
                : run_external(*variant.external, variant.policy.input, *external, inputs.shape());
        outcome.status = std::move(r.status);
        outcome.output = std::move(r.output);
        break;
      }
    }
  } catch (const std::exception& e) {
    outcome.status = Status::failed(e.what());
    return outcome;
  }
  outcome.runtime_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

}  // namespace attndev::experiment
