#include "experiment/variant_runner.hpp"

#include <chrono>
#include <exception>

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
      case Backend::cuda:
        // Seam for the CUDA backend: dispatch to lib/cuda here, returning "skipped: <why>" when
        // the device or the (algorithm, policy) pair is unsupported, so such rows never count as
        // compared.
        outcome.status = "skipped: CUDA backend not built";
        return outcome;
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
