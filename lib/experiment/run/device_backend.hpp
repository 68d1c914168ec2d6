// The run-level cuda backend (`"backend": "cuda"` of a config, `--backend cuda` of run, point and
// bench): the run's own work on the GPU. The inputs are drawn there by the generator's own
// per-element function, the FP64 golden is the streamed baseline under the fp64 policy, and every
// cpu (emulated) variant runs as its twin, the emulator's row functions in a faithful kernel; so
// the numbers are the CPU's (docs/cuda.md). Variants with a backend of their own (cuda kernels,
// external commands) run where they say, as on the CPU. Metrics are computed on the host from the
// outputs copied back.
//
// Everything here answers "not available" (never a fallback) in a build without CUDA or on a
// machine without a device; require_cuda_backend says so before anything is computed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "attention/attention.hpp"
#include "experiment/run/variant_runner.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "io/json_values.hpp"
#include "measure/measure.hpp"

namespace attndev::experiment {

// Where each part of one row was computed: the row's "ran_on" (docs/results.md).
struct RanOn {
  std::string inputs;   // "cpu", "cuda", or "file" (read from a file, rounded on the host)
  std::string golden;   // "cpu" or "cuda"
  std::string variant;  // "cpu", "cuda" or "external"
  std::string metrics;  // "cpu" (computed on the host from the copied-back outputs)
  io::Json to_json() const;
};
RanOn ran_on(Backend run_backend, const Variant& variant, bool inputs_from_file);

// Empty when this build and machine can run the cuda backend, else why not, naming what is
// missing and how to run on the CPU instead.
std::string cuda_backend_missing();

// For a config whose backend is cuda: throws ConfigError at `backend` when the device is missing,
// or at `variants[i]` when a cpu variant has no twin on the device (the chooser's reason), and
// io::MemoryError when a point of this shard cannot fit in the device's memory (with the numbers).
// Nothing is computed or written before this returns. A no-op for the cpu backend with no cuda
// variant.
void require_cuda_backend(const Config& config, const Plan& plan, std::size_t shard_index = 0,
                          std::size_t shard_count = 1);

// The inputs of a point drawn on the device, as measure::References takes them.
measure::InputSource device_drawn(const attention::Shape& shape,
                                  const inputs::Distribution& distribution, std::uint64_t seed);
// The golden on the device (throws std::runtime_error when it cannot run).
measure::GoldenFn device_golden();
// An emulated variant as its twin on the device; never throws (failed/skipped as run_variant).
VariantOutcome run_twin_variant(const Variant& variant, const attention::Inputs& inputs,
                                const attention::Options& options);

}  // namespace attndev::experiment
