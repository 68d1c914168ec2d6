// Launcher of the input kernel (inputs_kernel.cuh): Q, K, V drawn on the device by the
// generator's per-element function, then copied back into the emulator's tensors.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.cuh"
#include "cuda/inputs_kernel.cuh"

namespace attndev::cuda {

attention::Inputs draw_inputs_on_device(const attention::Shape& shape,
                                        const inputs::DistributionParams& dist, std::uint64_t seed,
                                        numerics::Format format) {
  // make_inputs' checks, before any device call: the same shapes are refused on both sides.
  if (shape.batch < 1 || shape.heads < 1 || shape.seq_q < 1 || shape.seq_kv < 1 ||
      shape.head_dim < 1)
    throw std::invalid_argument("draw_inputs_on_device: every dimension must be >= 1");
  if (static_cast<std::uint32_t>(shape.batch) > inputs::detail::kMaxBatch)
    throw std::invalid_argument("draw_inputs_on_device: batch must be <= 2^24");
  std::string why;
  if (!cuda_available(why)) throw std::runtime_error(why);

  attention::Inputs in;
  in.q = attention::Tensor(shape.batch, shape.heads, shape.seq_q, shape.head_dim);   // (B,H,N_q,d)
  in.k = attention::Tensor(shape.batch, shape.heads, shape.seq_kv, shape.head_dim);  // (B,H,N_kv,d)
  in.v = attention::Tensor(shape.batch, shape.heads, shape.seq_kv, shape.head_dim);  // (B,H,N_kv,d)
  device_inputs::Params p;
  p.dist = dist;
  p.seed = seed;
  p.format = format;
  p.batch = shape.batch;
  p.heads = shape.heads;
  p.seq_q = shape.seq_q;
  p.seq_kv = shape.seq_kv;
  p.head_dim = shape.head_dim;
  DeviceBuffer<double> q(p.q_count()), k(p.kv_count()), v(p.kv_count());
  p.q = q.get();
  p.k = k.get();
  p.v = v.get();
  constexpr unsigned kThreads = device_inputs::kThreads;
  device_inputs::inputs_kernel<<<grid_for(p.count(), kThreads), kThreads>>>(p);
  ATTNDEV_CUDA_CHECK_LAUNCH();
  ATTNDEV_CUDA_CHECK(cudaDeviceSynchronize());
  q.download(in.q.data.data(), p.q_count());
  k.download(in.k.data.data(), p.kv_count());
  v.download(in.v.data.data(), p.kv_count());
  return in;
}

}  // namespace attndev::cuda
