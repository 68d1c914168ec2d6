// The per-element function of the input generator, shared by the CPU (random_inputs.cpp) and the
// CUDA input kernel (lib/cuda/inputs_kernel.cuh): the value at (seed, tensor, b, h, row, col) is
// this code on either side, so the GPU's inputs are the CPU's bit for bit.
//
// Box-Muller needs a logarithm and a cosine. The platform's (glibc's log/cos, CUDA's libdevice)
// differ in the last bit between host and device, so these are our own, from + - * / and explicit
// fma only (IEEE operations, correctly rounded on both sides; -ffp-contract=off on the host,
// --fmad=false on the device). They are accurate to a few units in the last place of a double,
// not correctly rounded: a draw differs from one made with glibc's log and cos in the last bits of
// the double, which the rounding to a 16- or 32-bit input format almost never sees (the rate is
// measured in test/inputs/test_random_inputs.cpp and given in docs/cuda.md).
//
// No exceptions and no library calls here: argument checks are the callers' (make_tensor on the
// host, the launcher before a kernel starts).
#pragma once

#include <cmath>
#include <cstdint>

#include "inputs/philox.hpp"
#include "numerics/format.hpp"
#include "numerics/host_device.hpp"
#include "numerics/round.hpp"

namespace attndev::inputs {

// The distributions of the generator, as plain values (trivially copyable: a kernel argument).
// Distribution (random_inputs.hpp) is this plus its text form.
struct DistributionParams {
  enum class Kind : unsigned char { normal, uniform, outlier, channel };
  Kind kind = Kind::normal;
  // channel: N(0, a^2) + b * c_col in Q and K, c_col ~ N(0,1) drawn once per (tensor, b, h,
  // column) and shared by every row: the channel-wise bias SageAttention (arXiv 2410.02367,
  // Sec. 3) reports in K (and SageAttention2 in Q), which a token mean removes; V is N(0, a^2).
  double a = 0.0;  // normal: mean; uniform: lo; channel: std of the tokens
  double b = 1.0;  // normal: std;  uniform: hi; channel: std of the channel biases
  // outlier (FA-3 Table 3): N(0,1) + N(0, outlier_std^2) * Bernoulli(outlier_prob)
  double outlier_std = 10.0;
  double outlier_prob = 0.001;
};

enum class TensorId : std::uint32_t { q = 0, k = 1, v = 2 };

namespace detail {

// Counter layout: (col, row, h, b | tensor << 24 | draw << 28). Every coordinate has its own bits,
// so no two (tensor, b, h, row, col, draw) tuples share a counter, and the layout does not depend
// on the tensor's shape: the value at a coordinate is the same in a 4x4 and a 100x100 tensor.
inline constexpr int kBatchBits = 24;
inline constexpr std::uint32_t kMaxBatch = 1u << kBatchBits;
inline constexpr std::uint32_t kMaxTensor = 16;

// Independent streams of one element: draw 0 feeds every distribution's main value (and the
// outlier's Bernoulli from its upper words), draw 1 the outlier's extra normal, draw 2 at row 0
// a column's channel bias.
enum Draw : std::uint32_t { kDrawMain = 0, kDrawOutlier = 1, kDrawChannel = 2 };

struct Block {
  std::uint32_t w[4];
};

// Coordinates must be in range (b < 2^24, all >= 0): checked by the callers.
ATTNDEV_HD inline Block draw_block(std::uint64_t seed, TensorId tensor, int b, int h, int row,
                                   int col, Draw draw) {
  const auto t = static_cast<std::uint32_t>(tensor);
  const PhiloxCounter counter = {static_cast<std::uint32_t>(col), static_cast<std::uint32_t>(row),
                                 static_cast<std::uint32_t>(h),
                                 static_cast<std::uint32_t>(b) | (t << kBatchBits) |
                                     (static_cast<std::uint32_t>(draw) << (kBatchBits + 4))};
  const PhiloxKey key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const PhiloxCounter out = philox4x32_10(counter, key);
  return {{out[0], out[1], out[2], out[3]}};
}

// (0, 1) exclusive at both ends, so the log below never sees 0: (w + 1/2) / 2^32.
ATTNDEV_HD inline double open_unit(std::uint32_t w) {
  return (static_cast<double>(w) + 0.5) * 0x1p-32;
}

// [0, 1) with all 53 bits of a double's significand: 27 bits of w0, 26 of w1.
ATTNDEV_HD inline double unit53(std::uint32_t w0, std::uint32_t w1) {
  const std::uint64_t bits = (std::uint64_t{w0 >> 5} << 26) | (w1 >> 6);
  return static_cast<double>(bits) * 0x1p-53;
}

// ln(x) for a positive normal double (open_unit's range, [2^-33, 1)). x = 2^e m with m in
// [sqrt(1/2), sqrt(2)); ln m = 2 atanh(f), f = (m - 1) / (m + 1), |f| <= 0.1716, by its series
// to f^23 (the next term is below 2^-56 of the sum); ln 2 split in two so that e ln 2 adds no
// rounding of its own beyond the last addition.
ATTNDEV_HD inline double log_positive(double x) {
  const std::uint64_t u = numerics::bits_of(x);
  int e = static_cast<int>((u >> 52) & 0x7ff) - 1023;
  double m = numerics::double_from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 0x1.6a09e667f3bcdp+0) {  // sqrt(2)
    m *= 0.5;                      // exact
    ++e;
  }
  const double f = (m - 1.0) / (m + 1.0);  // m - 1 exact (Sterbenz)
  const double s = f * f;
  double g = 1.0 / 23.0;
  g = fma(g, s, 1.0 / 21.0);
  g = fma(g, s, 1.0 / 19.0);
  g = fma(g, s, 1.0 / 17.0);
  g = fma(g, s, 1.0 / 15.0);
  g = fma(g, s, 1.0 / 13.0);
  g = fma(g, s, 1.0 / 11.0);
  g = fma(g, s, 1.0 / 9.0);
  g = fma(g, s, 1.0 / 7.0);
  g = fma(g, s, 1.0 / 5.0);
  g = fma(g, s, 1.0 / 3.0);
  const double two_f = 2.0 * f;                             // exact
  const double log_m = fma(two_f * s, g, two_f);            // 2f + 2f^3 g(f^2)
  const double ed = static_cast<double>(e);                 // |e| <= 34: exact products below
  const double hi = ed * 0x1.62e42feep-1;                   // ln 2's high 32 bits: exact product
  const double lo = fma(ed, 0x1.a39ef35793c76p-33, log_m);  // the rest of ln 2, plus ln m
  return hi + lo;
}

// sin(x) and cos(x) for x in [0, pi/4], by their Taylor series in x^2 to x^19 / x^18 (the next
// terms are below 2^-60 of the result).
ATTNDEV_HD inline double sin_quarter(double x) {
  const double s = x * x;
  double g = -1.0 / 121645100408832000.0;  // -1/19!
  g = fma(g, s, 1.0 / 355687428096000.0);
  g = fma(g, s, -1.0 / 1307674368000.0);
  g = fma(g, s, 1.0 / 6227020800.0);
  g = fma(g, s, -1.0 / 39916800.0);
  g = fma(g, s, 1.0 / 362880.0);
  g = fma(g, s, -1.0 / 5040.0);
  g = fma(g, s, 1.0 / 120.0);
  g = fma(g, s, -1.0 / 6.0);
  return fma(x * s, g, x);
}
ATTNDEV_HD inline double cos_quarter(double x) {
  const double s = x * x;
  double g = -1.0 / 6402373705728000.0;  // -1/18!
  g = fma(g, s, 1.0 / 20922789888000.0);
  g = fma(g, s, -1.0 / 87178291200.0);
  g = fma(g, s, 1.0 / 479001600.0);
  g = fma(g, s, -1.0 / 3628800.0);
  g = fma(g, s, 1.0 / 40320.0);
  g = fma(g, s, -1.0 / 720.0);
  g = fma(g, s, 1.0 / 24.0);
  g = fma(g, s, -0.5);
  return fma(s, g, 1.0);
}

// cos(2 pi w / 2^32) for a 32-bit w. The turn is split exactly into a quadrant q and a fraction r
// of it (4 w / 2^32 = q + r), and r folded to [0, 1/2] by cos(pi/2 r) = sin(pi/2 (1 - r)), so the
// only rounding before the series is the one of x = r pi/2.
ATTNDEV_HD inline double cos_turn(std::uint32_t w) {
  const unsigned q = w >> 30;                                       // quadrant
  const double r = static_cast<double>(w & 0x3fffffffu) * 0x1p-30;  // [0, 1), exact
  const bool fold = r > 0.5;
  const double x = (fold ? 1.0 - r : r) * 0x1.921fb54442d18p+0;  // pi/2; 1 - r exact
  // cos(pi/2 (q + r)) = cos(pi/2 r), -sin(pi/2 r), -cos(pi/2 r), sin(pi/2 r) for q = 0..3.
  const bool want_sin = (q & 1u) != 0;
  const double v = want_sin != fold ? sin_quarter(x) : cos_quarter(x);
  return (q == 1u || q == 2u) ? -v : v;
}

// Box-Muller, cosine branch. The radius is at most sqrt(-2 ln 2^-33) ~ 6.8: the tail beyond is
// cut, which no attention input study resolves (probability ~1e-11 per element).
ATTNDEV_HD inline double standard_normal(std::uint32_t w0, std::uint32_t w1) {
  const double radius = sqrt(-2.0 * log_positive(open_unit(w0)));  // IEEE sqrt: correctly rounded
  return radius * cos_turn(w1);
}

// The largest double below y, towards x (y finite and x != y): std::nextafter(y, x) without the
// library call.
ATTNDEV_HD inline double next_towards(double y, double x) {
  if (y == 0.0) return x > 0.0 ? 0x1p-1074 : -0x1p-1074;
  const std::uint64_t u = numerics::bits_of(y);
  const bool up = (x > y) == (y > 0.0);  // away from zero in magnitude
  return numerics::double_from_bits(up ? u + 1 : u - 1);
}

}  // namespace detail

// One sample at a coordinate, before rounding (coordinates in range: the callers check).
ATTNDEV_HD inline double sample_at(const DistributionParams& dist, std::uint64_t seed,
                                   TensorId tensor, int b, int h, int row, int col) {
  using detail::Block;
  const Block w = detail::draw_block(seed, tensor, b, h, row, col, detail::kDrawMain);
  switch (dist.kind) {
    case DistributionParams::Kind::normal:
      return dist.a + dist.b * detail::standard_normal(w.w[0], w.w[1]);
    case DistributionParams::Kind::uniform: {
      const double x = dist.a + (dist.b - dist.a) * detail::unit53(w.w[0], w.w[1]);
      // lo + (hi-lo)*u can round up to hi itself when u is within an ulp of 1.
      return x < dist.b ? x : detail::next_towards(dist.b, dist.a);
    }
    case DistributionParams::Kind::outlier: {
      const double base = detail::standard_normal(w.w[0], w.w[1]);
      if (!(detail::unit53(w.w[2], w.w[3]) < dist.outlier_prob)) return base;
      const Block o = detail::draw_block(seed, tensor, b, h, row, col, detail::kDrawOutlier);
      return base + dist.outlier_std * detail::standard_normal(o.w[0], o.w[1]);
    }
    case DistributionParams::Kind::channel: {
      // V has no channel bias: SageAttention reports it in K (and Q); a V bias would only add a
      // constant to every output row, which no softmax error touches.
      if (tensor == TensorId::v) return dist.a * detail::standard_normal(w.w[0], w.w[1]);
      const Block c = detail::draw_block(seed, tensor, b, h, 0, col, detail::kDrawChannel);
      return dist.a * detail::standard_normal(w.w[0], w.w[1]) +
             dist.b * detail::standard_normal(c.w[0], c.w[1]);
    }
  }
  return 0.0;
}

// How inputs overflow when rounded to `format`: fp8 formats saturate, as FA-3's input casts do (an
// outlier beyond 448 must not become NaN or inf); the others follow the format's default (inf).
// Every rounding of inputs uses this rule: drawn here, read from files (lib/measure).
ATTNDEV_HD inline numerics::Overflow input_overflow(numerics::Format format) {
  const bool is_fp8 = format == numerics::Format::fp8_e4m3 || format == numerics::Format::fp8_e5m2;
  return is_fp8 ? numerics::Overflow::saturate : numerics::default_overflow(format);
}

// The stored element: the sample rounded once to the input format.
ATTNDEV_HD inline double input_at(const DistributionParams& dist, std::uint64_t seed,
                                  TensorId tensor, int b, int h, int row, int col,
                                  numerics::Format format) {
  return numerics::round_to(format, sample_at(dist, seed, tensor, b, h, row, col),
                            input_overflow(format));
}

}  // namespace attndev::inputs
