#include "experiment/spec/device_memory.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "cuda/dispatch.hpp"
#include "cuda/faithful_scratch.hpp"
#include "experiment/spec/memory.hpp"
#include "io/memory.hpp"

namespace attndev::experiment {

using io::sat_add;
using io::sat_mul;

namespace {

std::uint64_t rows_of(const attention::Shape& s) {
  return sat_mul(sat_mul(static_cast<std::uint64_t>(std::max(s.batch, 0)),
                         static_cast<std::uint64_t>(std::max(s.heads, 0))),
                 static_cast<std::uint64_t>(std::max(s.seq_q, 0)));
}

std::uint64_t elements_of(const attention::Shape& s, int rows) {
  return sat_mul(sat_mul(static_cast<std::uint64_t>(std::max(s.batch, 0)),
                         static_cast<std::uint64_t>(std::max(s.heads, 0))),
                 sat_mul(static_cast<std::uint64_t>(std::max(rows, 0)),
                         static_cast<std::uint64_t>(std::max(s.head_dim, 0))));
}

// Every run on the device (cuda_backend.cpp's run_selected): Q, K, V, O and lse as doubles.
std::uint64_t staged_bytes(const attention::Shape& s) {
  return sat_add(inputs_bytes(s), output_bytes(s));
}

// A faithful kernel (flash1, flash2, the streamed baseline; the golden is the last under fp64):
// its per-row scratch and flash2's per-row counts (faithful_launch.cu).
std::uint64_t twin_bytes(attention::Algorithm a, const numerics::PrecisionPolicy& policy,
                         const attention::Shape& s, const attention::Options& options) {
  attention::rows::Params rp;
  rp.head_dim = s.head_dim;
  rp.block_c = options.block_c;
  rp.policy = policy;
  const std::uint64_t per_row =
      static_cast<std::uint64_t>(std::max(cuda::faithful::scratch_per_row(a, rp), 1));
  std::uint64_t bytes = sat_add(staged_bytes(s), sat_mul(8, sat_mul(rows_of(s), per_row)));
  // The fp8 algorithms upload their quantized Q, K, V beside the staged ones, and the scales (at
  // most one per row).
  if (attention::is_fp8_algorithm(a)) bytes = sat_add(bytes, sat_mul(2, inputs_bytes(s)));
  return sat_add(bytes, sat_mul(4, rows_of(s)));
}

std::uint64_t element_bytes(cuda::MatElement e) {
  switch (e) {
    case cuda::MatElement::bf16:
    case cuda::MatElement::fp16:
      return 2;
    case cuda::MatElement::fp32:
    case cuda::MatElement::tf32:
      return 4;
    case cuda::MatElement::fp64:
      return 8;
  }
  return 8;
}

// What the dispatch table chose (the same select() the launch uses).
struct Chosen {
  enum Kind { none, tensor_core, faithful, cublas } kind = none;
  cuda::MatElement element = cuda::MatElement::fp64;  // the cuBLAS operands'
  template <class Tag>
  void operator()(Tag) {
    if constexpr (requires { Tag::kHeadDim; }) {
      kind = tensor_core;
    } else if constexpr (requires { Tag::kAlgorithm; }) {
      kind = faithful;
    } else {
      kind = cublas;
      element = Tag::kElement;
    }
  }
};

// A kernel's own copies on top of the staged doubles. flash2-tc: Q, K, V, O in bf16/fp16 and an
// fp32 lse. cuBLAS baseline: the operands, the fp32/fp64 P V output, and S and P of one query row,
// the least it runs with: it takes slices of as many rows as fit in half the free memory, at most
// 8 GiB (baseline_cublas.cu), so it fits wherever one row does, and uses up to that much more.
std::uint64_t kernel_bytes(const Variant& v, const attention::Shape& s,
                           const attention::Options& options) {
  cuda::Kernel kernel = cuda::Kernel::flash2;
  if (!v.kernel.empty()) {
    if (!cuda::parse_kernel(v.kernel, kernel)) return 0;
  } else if (const auto k = cuda::kernel_for(v.algorithm)) {
    kernel = *k;
  } else {
    return 0;  // no kernel: the row is skipped, nothing is allocated
  }
  Chosen chosen;
  if (!cuda::select(kernel, v.policy, s, options, [&](auto tag) { chosen(tag); }).supported)
    return 0;  // skipped with the dispatch table's reason: nothing is allocated
  const std::uint64_t q = elements_of(s, s.seq_q), kv = elements_of(s, s.seq_kv);
  switch (chosen.kind) {
    case Chosen::none:
      return 0;
    case Chosen::tensor_core:
      return sat_add(staged_bytes(s), sat_add(sat_mul(2, sat_add(sat_mul(2, q), sat_mul(2, kv))),
                                              sat_mul(4, rows_of(s))));
    case Chosen::faithful:
      return twin_bytes(v.algorithm, v.policy, s, options);
    case Chosen::cublas: {
      const std::uint64_t op = element_bytes(chosen.element), acc = op == 8 ? 8 : 4;
      const std::uint64_t row = sat_mul(static_cast<std::uint64_t>(s.seq_kv), sat_add(op, acc));
      return sat_add(sat_add(staged_bytes(s), sat_mul(op, sat_add(q, sat_mul(2, kv)))),
                     sat_add(sat_mul(acc, q), row));
    }
  }
  return 0;
}

}  // namespace

std::vector<DevicePart> device_parts(const Config& config, const Point& point) {
  std::vector<DevicePart> parts;
  const attention::Shape s = point.shape();
  const attention::Options base = point.options();
  const bool run_on_device = config.backend == Backend::cuda;
  if (run_on_device) {
    if (!point.axes.from_file()) parts.push_back({"inputs", inputs_bytes(s)});
    parts.push_back(
        {"golden", twin_bytes(attention::Algorithm::baseline, numerics::kGoldenPolicy, s, base)});
  }
  for (const Variant& v : config.variants) {
    attention::Options o = base;
    o.block_r = v.block_r.value_or(o.block_r);
    o.block_c = v.block_c.value_or(o.block_c);
    if (v.backend == Backend::cuda)
      parts.push_back({v.name, kernel_bytes(v, s, o)});
    else if (v.backend == Backend::cpu && run_on_device)
      parts.push_back({v.name, twin_bytes(v.algorithm, v.policy, s, o)});
  }
  return parts;
}

namespace {

DevicePart largest(const std::vector<DevicePart>& parts) {
  DevicePart best;
  for (const DevicePart& p : parts)
    if (p.bytes > best.bytes || best.name.empty()) best = p;
  return best;
}

}  // namespace

DevicePeak device_plan_peak(const Config& config, const Plan& plan, std::size_t shard_index,
                            std::size_t shard_count) {
  DevicePeak peak;
  const std::vector<std::uint32_t> shards =
      assign_shards(plan, std::max<std::size_t>(shard_count, 1));
  for (const Point& p : plan.points) {
    if (shards[p.index] != shard_index) continue;
    const std::vector<DevicePart> parts = device_parts(config, p);
    if (parts.empty()) continue;
    const DevicePart top = largest(parts);
    const std::uint64_t bytes = sat_add(top.bytes, kDeviceReserve);
    if (!peak.point || bytes > peak.bytes) peak = {bytes, &p, top};
  }
  return peak;
}

std::vector<DeviceMisfit> device_misfits(const Config& config, const Plan& plan,
                                         std::uint64_t device_bytes, std::size_t shard_index,
                                         std::size_t shard_count, std::size_t limit,
                                         std::size_t& more) {
  std::vector<DeviceMisfit> out;
  more = 0;
  const std::vector<std::uint32_t> shards =
      assign_shards(plan, std::max<std::size_t>(shard_count, 1));
  for (const Point& p : plan.points) {
    if (shards[p.index] != shard_index) continue;
    const std::vector<DevicePart> parts = device_parts(config, p);
    if (parts.empty()) continue;
    const DevicePart top = largest(parts);
    const std::uint64_t bytes = sat_add(top.bytes, kDeviceReserve);
    if (bytes <= device_bytes) continue;
    if (out.size() < limit)
      out.push_back({&p, bytes, top});
    else
      ++more;
  }
  return out;
}

std::uint64_t parse_byte_size(const std::string& text) {
  const auto bad = [&] {
    return std::invalid_argument("\"" + text +
                                 "\" is not a size: give bytes (85899345920) or a number with "
                                 "KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (of 1000)");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) throw bad();
  double value = 0;
  try {
    value = std::stod(text.substr(0, i));
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit = text.substr(i);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KIB" || unit == "MIB" || unit == "GIB" || unit == "TIB")
    scale = unit[0] == 'K' ? 0x1p10 : unit[0] == 'M' ? 0x1p20 : unit[0] == 'G' ? 0x1p30 : 0x1p40;
  else if (unit == "KB" || unit == "MB" || unit == "GB" || unit == "TB")
    scale = unit[0] == 'K' ? 1e3 : unit[0] == 'M' ? 1e6 : unit[0] == 'G' ? 1e9 : 1e12;
  else
    throw bad();
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes > 1.8e19) throw bad();
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace attndev::experiment
