#include "experiment/spec/memory.hpp"

#include <algorithm>
#include <set>
#include <thread>

#include "io/memory.hpp"

namespace attndev::experiment {

using io::sat_add;
using io::sat_mul;

namespace {

std::uint64_t elements(std::uint64_t b, std::uint64_t h, std::uint64_t n, std::uint64_t d) {
  return sat_mul(sat_mul(b, h), sat_mul(n, d));
}

std::uint64_t round_up(std::uint64_t x, std::uint64_t multiple) {
  return sat_mul((x + multiple - 1) / multiple, multiple);
}

int resolved_threads(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

std::uint64_t tensor_bytes(int batch, int heads, int rows, int cols) {
  return sat_mul(8, elements(static_cast<std::uint64_t>(std::max(batch, 0)),
                             static_cast<std::uint64_t>(std::max(heads, 0)),
                             static_cast<std::uint64_t>(std::max(rows, 0)),
                             static_cast<std::uint64_t>(std::max(cols, 0))));
}

std::uint64_t inputs_bytes(const attention::Shape& s) {
  return sat_add(tensor_bytes(s.batch, s.heads, s.seq_q, s.head_dim),
                 sat_mul(2, tensor_bytes(s.batch, s.heads, s.seq_kv, s.head_dim)));
}

std::uint64_t output_bytes(const attention::Shape& s) {
  return sat_add(tensor_bytes(s.batch, s.heads, s.seq_q, s.head_dim),
                 tensor_bytes(s.batch, s.heads, s.seq_q, 1));
}

std::uint64_t attention_run_bytes(const attention::Shape& s, const attention::Options& options,
                                  int threads) {
  const std::uint64_t inputs = inputs_bytes(s);
  // The input stage's copy of Q, K, V; the fast paths' packed copies (K and V padded to the tile
  // and the vector width, at most 8 bytes per element); the fp8 algorithms' quantized copies.
  const std::uint64_t block = static_cast<std::uint64_t>(std::max({options.block_c, 64, 1}));
  const std::uint64_t kv_padded =
      round_up(static_cast<std::uint64_t>(std::max(s.seq_kv, 0)), block);
  const std::uint64_t d_padded = round_up(static_cast<std::uint64_t>(std::max(s.head_dim, 0)), 16);
  const std::uint64_t packed = sat_add(
      tensor_bytes(s.batch, s.heads, s.seq_q, s.head_dim),
      sat_mul(16, elements(static_cast<std::uint64_t>(std::max(s.batch, 0)),
                           static_cast<std::uint64_t>(std::max(s.heads, 0)), kv_padded, d_padded)));
  // Per thread: a block of score rows over every key (the baseline's S and P) and the tiles.
  const std::uint64_t rows = static_cast<std::uint64_t>(std::max({options.block_r, 16, 1}));
  const std::uint64_t scratch = sat_mul(static_cast<std::uint64_t>(resolved_threads(threads)),
                                        sat_mul(16, sat_mul(rows, sat_add(kv_padded, d_padded))));
  std::uint64_t total = sat_add(sat_mul(2, inputs), packed);
  total = sat_add(total, output_bytes(s));
  return sat_add(total, scratch);
}

namespace {

std::size_t input_formats(const Config& config) {
  std::set<numerics::Format> formats;
  for (const Variant& v : config.variants) formats.insert(v.policy.input);
  return formats.size();
}

std::uint64_t peak_bytes(std::size_t formats, const Point& point, int threads) {
  const std::uint64_t held =
      sat_mul(formats, sat_add(inputs_bytes(point.shape()), output_bytes(point.shape())));
  // Every run (golden or variant) has the same bound at a point: tiles aside, the shape decides.
  return sat_add(held, attention_run_bytes(point.shape(), point.options(), threads));
}

}  // namespace

std::uint64_t point_peak_bytes(const Config& config, const Point& point, int threads) {
  return peak_bytes(input_formats(config), point, threads);
}

PlanPeak plan_peak_bytes(const Config& config, const Plan& plan, int threads,
                         std::size_t shard_index, std::size_t shard_count) {
  PlanPeak peak;
  const std::size_t formats = input_formats(config);
  for (const Point& p : plan.points) {
    if (shard_count > 1 && shard_of(p, shard_count) != shard_index) continue;
    const std::uint64_t bytes = peak_bytes(formats, p, threads);
    if (!peak.point || bytes > peak.bytes) peak = {bytes, &p};
  }
  return peak;
}

}  // namespace attndev::experiment
