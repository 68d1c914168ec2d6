#include "inputs/random_inputs.hpp"

#include <charconv>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "inputs/philox.hpp"
#include "numerics/round.hpp"

namespace attndev::inputs {

namespace {

// Counter layout: (col, row, h, b | tensor << 24 | draw << 28). Every coordinate has its own bits,
// so no two (tensor, b, h, row, col, draw) tuples share a counter, and the layout does not depend
// on the tensor's shape: the value at a coordinate is the same in a 4x4 and a 100x100 tensor.
constexpr int kBatchBits = 24;
constexpr std::uint32_t kMaxBatch = 1u << kBatchBits;
constexpr std::uint32_t kMaxTensor = 16;

// Independent streams of one element: draw 0 feeds every distribution's main value (and the
// outlier's Bernoulli from its upper words), draw 1 the outlier's extra normal, draw 2 at row 0
// a column's channel bias.
enum Draw : std::uint32_t { kDrawMain = 0, kDrawOutlier = 1, kDrawChannel = 2 };

PhiloxCounter draw_block(std::uint64_t seed, TensorId tensor, int b, int h, int row, int col,
                         Draw draw) {
  const auto t = static_cast<std::uint32_t>(tensor);
  if (b < 0 || h < 0 || row < 0 || col < 0 || static_cast<std::uint32_t>(b) >= kMaxBatch ||
      t >= kMaxTensor)
    throw std::invalid_argument("inputs: coordinate out of range (b=" + std::to_string(b) +
                                ", h=" + std::to_string(h) + ", row=" + std::to_string(row) +
                                ", col=" + std::to_string(col) + "); batch must be < 2^24");
  const PhiloxCounter counter = {static_cast<std::uint32_t>(col), static_cast<std::uint32_t>(row),
                                 static_cast<std::uint32_t>(h),
                                 static_cast<std::uint32_t>(b) | (t << kBatchBits) |
                                     (static_cast<std::uint32_t>(draw) << (kBatchBits + 4))};
  const PhiloxKey key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  return philox4x32_10(counter, key);
}

// (0, 1) exclusive at both ends, so log() below never sees 0: (w + 1/2) / 2^32.
double open_unit(std::uint32_t w) {
  return (static_cast<double>(w) + 0.5) * 0x1p-32;
}

// [0, 1) with all 53 bits of a double's significand: 27 bits of w0, 26 of w1.
double unit53(std::uint32_t w0, std::uint32_t w1) {
  const std::uint64_t bits = (std::uint64_t{w0 >> 5} << 26) | (w1 >> 6);
  return static_cast<double>(bits) * 0x1p-53;
}

// Box-Muller, cosine branch. The radius is at most sqrt(-2 ln 2^-33) ~ 6.8: the tail beyond is
// cut, which no attention input study resolves (probability ~1e-11 per element).
double standard_normal(std::uint32_t w0, std::uint32_t w1) {
  const double radius = std::sqrt(-2.0 * std::log(open_unit(w0)));
  const double angle = 2.0 * std::numbers::pi * (static_cast<double>(w1) * 0x1p-32);
  return radius * std::cos(angle);
}

std::string number_text(double x) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
  return std::string(buf, res.ptr);
}

}  // namespace

std::string Distribution::describe() const {
  switch (kind) {
    case Kind::normal:
      return "normal(" + number_text(a) + "," + number_text(b) + ")";
    case Kind::uniform:
      return "uniform(" + number_text(a) + "," + number_text(b) + ")";
    case Kind::outlier:
      return "outlier(std=" + number_text(outlier_std) + ",p=" + number_text(outlier_prob) + ")";
    case Kind::channel:
      return "channel(std=" + number_text(a) + ",bias=" + number_text(b) + ")";
  }
  return "?";
}

double sample(const Distribution& dist, std::uint64_t seed, TensorId tensor, int b, int h, int row,
              int col) {
  const PhiloxCounter w = draw_block(seed, tensor, b, h, row, col, kDrawMain);
  switch (dist.kind) {
    case Distribution::Kind::normal:
      return dist.a + dist.b * standard_normal(w[0], w[1]);
    case Distribution::Kind::uniform: {
      const double x = dist.a + (dist.b - dist.a) * unit53(w[0], w[1]);
      // lo + (hi-lo)*u can round up to hi itself when u is within an ulp of 1.
      return x < dist.b ? x : std::nextafter(dist.b, dist.a);
    }
    case Distribution::Kind::outlier: {
      const double base = standard_normal(w[0], w[1]);
      if (!(unit53(w[2], w[3]) < dist.outlier_prob)) return base;
      const PhiloxCounter o = draw_block(seed, tensor, b, h, row, col, kDrawOutlier);
      return base + dist.outlier_std * standard_normal(o[0], o[1]);
    }
    case Distribution::Kind::channel: {
      // V has no channel bias: SageAttention reports it in K (and Q); a V bias would only add a
      // constant to every output row, which no softmax error touches.
      if (tensor == TensorId::v) return dist.a * standard_normal(w[0], w[1]);
      const PhiloxCounter c = draw_block(seed, tensor, b, h, 0, col, kDrawChannel);
      return dist.a * standard_normal(w[0], w[1]) + dist.b * standard_normal(c[0], c[1]);
    }
  }
  return 0.0;
}

attention::Tensor make_tensor(int batch, int heads, int rows, int cols, const Distribution& dist,
                              std::uint64_t seed, TensorId tensor, numerics::Format format) {
  if (batch < 1 || heads < 1 || rows < 1 || cols < 1)
    throw std::invalid_argument(
        "make_tensor: every dimension must be >= 1 (batch=" + std::to_string(batch) +
        ", heads=" + std::to_string(heads) + ", rows=" + std::to_string(rows) +
        ", cols=" + std::to_string(cols) + ")");
  const numerics::Overflow overflow = input_overflow(format);
  attention::Tensor t(batch, heads, rows, cols);  // (B, H, N, d)
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          t.at(b, h, r, c) =
              numerics::round_to(format, sample(dist, seed, tensor, b, h, r, c), overflow);
  return t;
}

attention::Inputs make_inputs(const attention::Shape& shape, const Distribution& dist,
                              std::uint64_t seed, numerics::Format input_format) {
  if (shape.batch < 1 || shape.heads < 1 || shape.seq_q < 1 || shape.seq_kv < 1 ||
      shape.head_dim < 1)
    throw std::invalid_argument(
        "make_inputs: every dimension must be >= 1 (batch=" + std::to_string(shape.batch) +
        ", heads=" + std::to_string(shape.heads) + ", seq_q=" + std::to_string(shape.seq_q) +
        ", seq_kv=" + std::to_string(shape.seq_kv) +
        ", head_dim=" + std::to_string(shape.head_dim) + ")");
  const int b = shape.batch, h = shape.heads, d = shape.head_dim;
  attention::Inputs in;
  in.q = make_tensor(b, h, shape.seq_q, d, dist, seed, TensorId::q, input_format);   // (B,H,N_q,d)
  in.k = make_tensor(b, h, shape.seq_kv, d, dist, seed, TensorId::k, input_format);  // (B,H,N_kv,d)
  in.v = make_tensor(b, h, shape.seq_kv, d, dist, seed, TensorId::v, input_format);  // (B,H,N_kv,d)
  return in;
}

}  // namespace attndev::inputs
