// Device memory of GPU work, estimated from the allocations of lib/cuda's launchers, so that
// `attndev plan` and `attndev run` refuse a point that cannot fit before anything runs, with the
// numbers (the host's estimate is memory.hpp; this file is the device's alone).
//
// Each part of a point (the input draw, the golden, one variant) allocates, runs and frees on its
// own, so a point's peak is its largest part, plus kDeviceReserve for the CUDA context, cuBLAS and
// the timing's L2 flush buffer. Saturating, like memory.hpp: an overflow is io::kBytesOverflow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"

namespace attndev::experiment {

// What the CUDA context, cuBLAS's workspace and the L2 flush buffer take besides the parts.
inline constexpr std::uint64_t kDeviceReserve = std::uint64_t{1} << 30;

// One part of a point on the device: "inputs", "golden" or a variant's name, and its bytes.
struct DevicePart {
  std::string name;
  std::uint64_t bytes = 0;
};

// The parts of `point` that run on the device: under the run-level cuda backend the input draw
// (drawn inputs only), the golden and every cpu (emulated) variant; cuda variants in any run.
std::vector<DevicePart> device_parts(const Config& config, const Point& point);

struct DevicePeak {
  std::uint64_t bytes = 0;       // the largest part plus kDeviceReserve; 0 when nothing runs there
  const Point* point = nullptr;  // where it is reached (null when nothing runs on the device)
  DevicePart part;               // the largest part there
};
// The peak over this shard's points.
DevicePeak device_plan_peak(const Config& config, const Plan& plan, std::size_t shard_index = 0,
                            std::size_t shard_count = 1);

// The points of this shard whose peak exceeds `device_bytes`, at most `limit` of them (the rest
// are counted in `more`), each with its largest part: what plan and run print when refusing.
struct DeviceMisfit {
  const Point* point = nullptr;
  std::uint64_t bytes = 0;
  DevicePart part;
};
std::vector<DeviceMisfit> device_misfits(const Config& config, const Plan& plan,
                                         std::uint64_t device_bytes, std::size_t shard_index,
                                         std::size_t shard_count, std::size_t limit,
                                         std::size_t& more);

// "80GiB", "80 GB" (decimal), "81920MiB", "85899345920": a device's memory given on the command
// line. Throws std::invalid_argument with what it accepts.
std::uint64_t parse_byte_size(const std::string& text);

}  // namespace attndev::experiment
