// Scaled fp8 quantization and incoherent processing, as FlashAttention-3 feeds its fp8 kernel.
//
// A scaled tensor holds e4m3 values x8 and one scale per block of rows; the real value is
// x8 * scale. The scale of a block is amax / 448 (448 = e4m3's largest finite value), so the
// block's largest element lands on the top of the format and nothing saturates; every other
// element keeps 3 fraction bits of its own. One outlier in a block therefore pushes its small
// neighbours towards e4m3's subnormals (below 2^-6 * scale they lose bits, below 2^-10 * scale
// they become 0): the smaller the block, the fewer elements share an outlier's scale. That is the
// whole case for block quantization (per-block scales: Br x d for Q, Bc x d for K and V).
//
// Incoherent processing multiplies Q and K by M = D H / sqrt(d) (D a random +-1 diagonal, H the
// Sylvester-Hadamard matrix). M is orthogonal, so (QM)(KM)^T = QK^T in exact arithmetic, while
// each row of QM mixes all d coordinates of a row of Q: an outlier coordinate is spread over the
// whole row at 1/sqrt(d) of its size, and the row's amax (hence its scale) drops.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention.hpp"
#include "numerics/format.hpp"
#include "numerics/host_device.hpp"

namespace attndev::attention::fp8 {

inline constexpr numerics::Format kFp8Format = numerics::Format::fp8_e4m3;
// Scales are computed and applied in fp32, as a kernel's epilogue holds them.
inline constexpr numerics::Format kScaleFormat = numerics::Format::fp32;

// The scales of a ScaledTensor as plain pointers and counts (ATTNDEV_HD): what the Dequant hook
// reads, on the CPU and in the CUDA twins (a copy of the scales in device memory).
struct ScaleView {
  const double* scales = nullptr;  // (B, H, blocks_per_head)
  int heads = 1;
  int block_rows = 1;
  int blocks_per_head = 1;
  ATTNDEV_HD double scale(int b, int h, int row) const {
    return scales[(static_cast<std::size_t>(b) * heads + h) * blocks_per_head + row / block_rows];
  }
};

struct ScaledTensor {
  Tensor values;               // (B, H, N, d) e4m3 values (held as double, exactly)
  int block_rows = 1;          // rows of one (b, h) that share a scale
  int blocks_per_head = 1;     // ceil(N / block_rows)
  std::vector<double> scales;  // (B, H, blocks_per_head) fp32 scales, > 0

  ScaleView view() const { return {scales.data(), values.heads, block_rows, blocks_per_head}; }
  double scale(int b, int h, int row) const { return view().scale(b, h, row); }
  // x8 * scale in double (exact: 4 significant bits times 24), for tests and the golden's view.
  Tensor dequantized() const;
};

// The scale that maps amax onto e4m3's largest value: R_fp32(amax / 448); 1 for an all-zero block
// (any positive scale quantizes zeros exactly, and 1 keeps the block's dequantization exact).
double scale_for(double amax);

// e4m3(R_fp32(x / scale)), saturating: the kernel divides in fp32, then casts with .satfinite.
double quantize_value(double x, double scale);

// One scale per `block_rows` rows of each (b, h) matrix.
ScaledTensor quantize_blocks(const Tensor& x, int block_rows);

// One scale for the whole tensor (every batch, head and row): "per-tensor scaling".
ScaledTensor quantize_per_tensor(const Tensor& x);

// d random signs (+1/-1) from a seed: the diagonal D of incoherent processing.
std::vector<double> random_signs(int d, std::uint64_t seed);

inline bool is_power_of_two(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// In-place fast Walsh-Hadamard transform of x[0..n) (n a power of two), unnormalized: x <- H x,
// with H the Sylvester-ordered Hadamard matrix (H H^T = n I). Each butterfly's sum and difference
// is rounded to `arith`: log2(n) roundings per output element.
void fwht(double* x, int n, numerics::Format arith);

// Every row x_i of every (b, h) becomes R_store((x_i D) H / sqrt(d)): signs applied (exact), the
// transform in `arith`, the 1/sqrt(d) scaling in `arith` (exact when d is a power of 4), then
// rounded to `store`, the format the rotated tensor is written in before quantization.
// Throws std::invalid_argument unless d is a power of two and signs.size() == d.
void rotate_rows(Tensor& x, const std::vector<double>& signs, numerics::Format arith,
                 numerics::Format store);

}  // namespace attndev::attention::fp8
