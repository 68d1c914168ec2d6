// Q, K, V drawn on the device: one thread per element, each the generator's own per-element
// function (lib/inputs/sample.hpp: Philox, Box-Muller with the generator's log and cos, one
// rounding to the input format), so the device's inputs equal inputs::make_inputs bit for bit.
// The body is ATTNDEV_HD and free of CUDA types: test/cuda/test_device_inputs.cpp runs it for every
// thread of the launch on the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/grid.hpp"
#include "inputs/sample.hpp"
#include "numerics/format.hpp"
#include "numerics/host_device.hpp"

namespace attndev::cuda::device_inputs {

// Threads per block of the launch (one element each).
inline constexpr unsigned kThreads = 256;

struct Params {
  inputs::DistributionParams dist;
  std::uint64_t seed = 0;
  numerics::Format format = numerics::Format::fp64;
  int batch = 1, heads = 1, seq_q = 1, seq_kv = 1, head_dim = 1;
  double* q = nullptr;  // (B, H, N_q, d)
  double* k = nullptr;  // (B, H, N_kv, d)
  double* v = nullptr;  // (B, H, N_kv, d)

  ATTNDEV_HD std::size_t q_count() const {
    return static_cast<std::size_t>(batch) * heads * seq_q * head_dim;
  }
  ATTNDEV_HD std::size_t kv_count() const {
    return static_cast<std::size_t>(batch) * heads * seq_kv * head_dim;
  }
  // Elements of Q, K and V together: the launch's x extent.
  ATTNDEV_HD std::size_t count() const { return q_count() + 2 * kv_count(); }
};

// Element e of the concatenation Q | K | V: its tensor, coordinates and stored value.
ATTNDEV_HD inline void element(const Params& p, ThreadIndex t) {
  std::size_t e = t.global_x();
  if (e >= p.count()) return;
  inputs::TensorId tensor = inputs::TensorId::q;
  double* out = p.q;
  int rows = p.seq_q;
  if (e >= p.q_count()) {
    e -= p.q_count();
    const bool is_v = e >= p.kv_count();
    if (is_v) e -= p.kv_count();
    tensor = is_v ? inputs::TensorId::v : inputs::TensorId::k;
    out = is_v ? p.v : p.k;
    rows = p.seq_kv;
  }
  const std::size_t d = static_cast<std::size_t>(p.head_dim);
  const int col = static_cast<int>(e % d);
  const int row = static_cast<int>(e / d % static_cast<std::size_t>(rows));
  const std::size_t bh = e / d / static_cast<std::size_t>(rows);
  const int h = static_cast<int>(bh % static_cast<std::size_t>(p.heads));
  const int b = static_cast<int>(bh / static_cast<std::size_t>(p.heads));
  out[e] = inputs::input_at(p.dist, p.seed, tensor, b, h, row, col, p.format);
}

#if defined(__CUDACC__)
__global__ void inputs_kernel(Params p) {
  element(p, this_thread());
}
#endif

}  // namespace attndev::cuda::device_inputs
