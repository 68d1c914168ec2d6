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
  const auto u = [](int x) { return static_cast<std::uint64_t>(std::max(x, 0)); };
  const std::uint64_t heads = sat_mul(u(s.batch), u(s.heads));
  const std::uint64_t n_q = u(s.seq_q), n_kv = u(s.seq_kv);
  const std::uint64_t d_padded = round_up(u(s.head_dim), 16);
  // The emulator's own sizes (lib/attention/fast_items.hpp, generic_rows.hpp): a flash work item
  // holds min(Br, N_q) rows of one K/V tile (Bc padded to the vector width, at most 16), the
  // baseline's 16 rows of S over every key (padded to 64); K^T is packed in Bc-column tiles (64
  // for the baseline). A tile larger than N is allocated as it is given: Bc = 10^5 at N = 64
  // holds 10^5 columns, Br = 10^9 only N rows.
  const std::uint64_t bc = std::max<std::uint64_t>(u(options.block_c), 1);
  const std::uint64_t flash_rows =
      std::min<std::uint64_t>(std::max<std::uint64_t>(u(options.block_r), 1), n_q);
  const std::uint64_t baseline_rows = std::min<std::uint64_t>(16, n_q);
  const std::uint64_t flash_tile = round_up(bc, 16);
  const std::uint64_t flash_keys = sat_mul((n_kv + bc - 1) / bc, flash_tile);
  const std::uint64_t baseline_keys = round_up(n_kv, 64);
  const std::uint64_t item =
      std::max(sat_mul(flash_rows, sat_add(flash_tile, sat_mul(3, d_padded))),
               sat_mul(baseline_rows, sat_add(baseline_keys, d_padded)));
  // Threads beyond the work items (B*H blocks of rows) have nothing to hold.
  const std::uint64_t items = sat_mul(heads, std::max<std::uint64_t>((n_q + 15) / 16, 1));
  const std::uint64_t workers =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(resolved_threads(threads)), items);
  const std::uint64_t scratch = sat_mul(8, sat_mul(workers, item));
  // The input stage's copy of Q, K, V, then the fast paths' packed Q, K^T (tiles) and V.
  const std::uint64_t packed = sat_mul(
      8, sat_mul(heads, sat_add(sat_mul(n_q, d_padded),
                                sat_add(sat_mul(std::max(flash_keys, baseline_keys), d_padded),
                                        sat_mul(n_kv, d_padded)))));
  // Inputs twice: the input stage's copy, and the fp8 algorithms' quantized values.
  std::uint64_t total = sat_add(sat_mul(3, inputs_bytes(s)), packed);
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

std::uint64_t rows_bytes(const Config& config, std::size_t points) {
  return sat_mul(kResultRowBytes, sat_mul(points, config.variants.size()));
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
