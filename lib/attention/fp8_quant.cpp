#include "attention/fp8_quant.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/arith.hpp"
#include "numerics/float_rounder.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::fp8 {

namespace {

using numerics::Format;

// True when every x[i] is a float: the quantization and rotation then run in float, where
// div_in/add_in/sub_in/mul_in(fp32, ...) of float operands are the IEEE float operations
// (correctly rounded: the exact result rounded once to fp32), and the loops vectorize.
bool all_float(const double* x, std::size_t n) {
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok &= static_cast<double>(static_cast<float>(x[i])) == x[i];
  return ok;
}

double amax_of(const double* x, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

}  // namespace

Tensor ScaledTensor::dequantized() const {
  Tensor t = values;
  for (int b = 0; b < t.batch; ++b)
    for (int h = 0; h < t.heads; ++h)
      for (int n = 0; n < t.rows; ++n)
        for (int c = 0; c < t.cols; ++c) t.at(b, h, n, c) *= scale(b, h, n);
  return t;
}

double scale_for(double amax) {
  if (!(amax > 0.0)) return 1.0;
  const double s = numerics::div_in(kScaleFormat, amax, numerics::traits(kFp8Format).max_finite);
  // amax below 448 * 2^-149 would give a zero (or subnormal-precision) fp32 scale: such a block
  // is numerically zero for every purpose here, and a zero scale would divide by zero.
  return s > 0.0 ? s : 1.0;
}

double quantize_value(double x, double scale) {
  return numerics::round_to(kFp8Format, numerics::div_in(kScaleFormat, x, scale),
                            numerics::Overflow::saturate);
}

namespace {

// quantize_value over an array: in float when the values are floats (the scale always is).
void quantize_all(double* x, std::size_t n, double scale) {
  if (!all_float(x, n)) {
    for (std::size_t i = 0; i < n; ++i) x[i] = quantize_value(x[i], scale);
    return;
  }
  const numerics::FloatRounder e4m3(kFp8Format, numerics::Overflow::saturate);
  const float s = static_cast<float>(scale);
  for (std::size_t i = 0; i < n; ++i) x[i] = e4m3(static_cast<float>(x[i]) / s);
}

}  // namespace

ScaledTensor quantize_blocks(const Tensor& x, int block_rows) {
  if (block_rows < 1)
    throw std::invalid_argument("fp8 block quantization: block_rows must be >= 1 (got " +
                                std::to_string(block_rows) + ")");
  ScaledTensor q;
  q.values = x;
  q.block_rows = block_rows;
  q.blocks_per_head = (x.rows + block_rows - 1) / block_rows;
  q.scales.resize(static_cast<std::size_t>(x.batch) * x.heads * q.blocks_per_head);
  for (int b = 0; b < x.batch; ++b) {
    for (int h = 0; h < x.heads; ++h) {
      for (int blk = 0; blk < q.blocks_per_head; ++blk) {
        const int r0 = blk * block_rows, r1 = std::min(x.rows, r0 + block_rows);
        double* first = q.values.data.data() + x.index(b, h, r0, 0);  // (r1 - r0, d)
        const std::size_t n = static_cast<std::size_t>(r1 - r0) * x.cols;
        const double s = scale_for(amax_of(first, n));
        q.scales[(static_cast<std::size_t>(b) * x.heads + h) * q.blocks_per_head + blk] = s;
        quantize_all(first, n, s);
      }
    }
  }
  return q;
}

ScaledTensor quantize_per_tensor(const Tensor& x) {
  ScaledTensor q;
  q.values = x;
  q.block_rows = std::max(1, x.rows);
  q.blocks_per_head = 1;
  const double s = scale_for(amax_of(x.data.data(), x.data.size()));
  q.scales.assign(static_cast<std::size_t>(x.batch) * x.heads, s);
  quantize_all(q.values.data.data(), q.values.data.size(), s);
  return q;
}

std::vector<double> random_signs(int d, std::uint64_t seed) {
  std::vector<double> signs(static_cast<std::size_t>(std::max(d, 0)));
  for (std::size_t i = 0; i < signs.size(); ++i) {
    // splitmix64 of (seed, i): each sign is a pure function of its index.
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    signs[i] = (z >> 63) ? -1.0 : 1.0;
  }
  return signs;
}

void fwht(double* x, int n, Format arith) {
  for (int half = 1; half < n; half *= 2) {
    for (int start = 0; start < n; start += 2 * half) {
      for (int i = start; i < start + half; ++i) {
        const double a = x[i], b = x[i + half];
        x[i] = numerics::add_in(arith, a, b);
        x[i + half] = numerics::sub_in(arith, a, b);
      }
    }
  }
}

namespace {

// fwht(x, n, fp32) on floats: the same butterflies in the same order, each a float + or -.
void fwht_f32(float* x, int n) {
  for (int half = 1; half < n; half *= 2) {
    for (int start = 0; start < n; start += 2 * half) {
      for (int i = start; i < start + half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a + b;
        x[i + half] = a - b;
      }
    }
  }
}

}  // namespace

void rotate_rows(Tensor& x, const std::vector<double>& signs, Format arith, Format store) {
  const int d = x.cols;
  if (!is_power_of_two(d))
    throw std::invalid_argument("incoherent processing needs head_dim a power of two (got " +
                                std::to_string(d) +
                                "); use flash3-fp8-no-hadamard or a power-of-two head_dim");
  if (signs.size() != static_cast<std::size_t>(d))
    throw std::invalid_argument("rotate_rows: " + std::to_string(signs.size()) +
                                " signs for head_dim " + std::to_string(d));
  // 1/sqrt(d) in the arithmetic format: exact for d = 4^k, one rounding otherwise.
  const double inv_sqrt_d = numerics::round_to(arith, 1.0 / std::sqrt(static_cast<double>(d)));
  const std::size_t rows = static_cast<std::size_t>(x.batch) * x.heads * x.rows;
  if (arith == Format::fp32 && store != Format::fp64 && all_float(x.data.data(), x.data.size())) {
    // fp32 arithmetic on float values: each butterfly's add_in/sub_in and the scaling's mul_in
    // is one float operation; the store rounding is round_to's on a float.
    const numerics::FloatRounder round_store(store, numerics::default_overflow(store));
    const float scale = static_cast<float>(inv_sqrt_d);
    std::vector<float> row(static_cast<std::size_t>(d));  // (d)
    for (std::size_t r = 0; r < rows; ++r) {
      double* out = x.data.data() + r * static_cast<std::size_t>(d);  // (d)
      for (int t = 0; t < d; ++t)
        row[t] = static_cast<float>(out[t] * signs[static_cast<std::size_t>(t)]);
      fwht_f32(row.data(), d);
      for (int t = 0; t < d; ++t) out[t] = round_store(row[t] * scale);
    }
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    double* row = x.data.data() + r * static_cast<std::size_t>(d);  // (d)
    for (int t = 0; t < d; ++t) row[t] *= signs[static_cast<std::size_t>(t)];
    fwht(row, d, arith);
    for (int t = 0; t < d; ++t)
      row[t] = numerics::round_to(store, numerics::mul_in(arith, row[t], inv_sqrt_d));
  }
}

}  // namespace attndev::attention::fp8
