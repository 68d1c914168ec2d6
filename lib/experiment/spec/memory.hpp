// Memory estimates of attention work, checked against the machine before anything is allocated
// (io/memory.hpp says why). Saturating: a shape whose sizes overflow gives io::kBytesOverflow.
//
// The estimates are upper bounds of what the emulator holds at its peak, from its allocations:
// the inputs, the copies the input stage makes, the packed copies of the fast paths (and the
// quantized copies of the fp8 algorithms), the output and the per-thread score rows. CUDA
// variants are counted on the host only (their device memory is the CUDA backend's to check).
#pragma once

#include <cstdint>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"

namespace attndev::experiment {

// 8 bytes (a double) per element of a (B, H, N, d) tensor.
std::uint64_t tensor_bytes(int batch, int heads, int rows, int cols);

// Q, K and V of the shape, as make_inputs holds them.
std::uint64_t inputs_bytes(const attention::Shape& shape);

// One output: O and the log-sum-exp.
std::uint64_t output_bytes(const attention::Shape& shape);

// What one attention::run / golden call allocates while it runs, its output included (the
// caller's inputs not included). `threads` 0: all hardware threads.
std::uint64_t attention_run_bytes(const attention::Shape& shape, const attention::Options& options,
                                  int threads);

// The runner's peak at one point: the inputs and the golden of every input format its variants
// use, held for the input set, plus the largest single run.
std::uint64_t point_peak_bytes(const Config& config, const Point& point, int threads);

// What one result row costs in memory while run (its tables), report and merge hold every row of
// a folder: a JSON object of about 60 keys, measured at about 7.4 KB with nlohmann::json (docs/
// results.md says how). 10^6 points x 3 variants is then 22 GB, which plan says and run refuses.
inline constexpr std::uint64_t kResultRowBytes = 8 * 1024;

// The rows of `points` points of the config: points x variants x kResultRowBytes.
std::uint64_t rows_bytes(const Config& config, std::size_t points);

struct PlanPeak {
  std::uint64_t bytes = 0;
  const Point* point = nullptr;  // the point where it is reached (null for an empty selection)
};

// The largest point_peak_bytes over the points of shard `shard_index` of `shard_count`.
PlanPeak plan_peak_bytes(const Config& config, const Plan& plan, int threads,
                         std::size_t shard_index = 0, std::size_t shard_count = 1);

}  // namespace attndev::experiment
