// Deterministic attention inputs for the CUDA checks (the GPU test and attndev_cuda_check):
// a splitmix64 hash of (seed, tensor, flat index) -> N(0, 1) by Box-Muller, rounded once to the
// input format. Self-contained so that these checks depend only on lib/attention and lib/cuda.
#pragma once

#include <cmath>
#include <cstdint>

#include "attention/attention.hpp"
#include "numerics/round.hpp"

namespace attndev::cuda::tools {

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1): never 0, so log() below is finite.
inline double uniform01(std::uint64_t h) {
  return (static_cast<double>(h >> 11) + 0.5) * 0x1p-53;
}

inline double normal_at(std::uint64_t seed, std::uint64_t tensor, std::uint64_t index) {
  const std::uint64_t h = mix64(seed ^ mix64(tensor * 0x100000001b3ull ^ mix64(index)));
  const double u1 = uniform01(h), u2 = uniform01(mix64(h));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

inline void fill(attention::Tensor& t, std::uint64_t seed, std::uint64_t tensor,
                 numerics::Format format, double stddev) {
  for (std::size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = numerics::round_to(format, stddev * normal_at(seed, tensor, i));
}

// Q, K, V ~ N(0, stddev^2), rounded to `format`.
inline attention::Inputs random_inputs(const attention::Shape& s, std::uint64_t seed,
                                       numerics::Format format, double stddev = 1.0) {
  attention::Inputs in;
  in.q = attention::Tensor(s.batch, s.heads, s.seq_q, s.head_dim);
  in.k = attention::Tensor(s.batch, s.heads, s.seq_kv, s.head_dim);
  in.v = attention::Tensor(s.batch, s.heads, s.seq_kv, s.head_dim);
  fill(in.q, seed, 0, format, stddev);
  fill(in.k, seed, 1, format, stddev);
  fill(in.v, seed, 2, format, stddev);
  return in;
}

}  // namespace attndev::cuda::tools
