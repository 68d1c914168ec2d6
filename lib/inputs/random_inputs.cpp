#include "inputs/random_inputs.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>

#include "numerics/round.hpp"

namespace attndev::inputs {

namespace {

// The callers' share of sample_at's contract: coordinates in range.
void check_coordinate(TensorId tensor, int b, int h, int row, int col) {
  const auto t = static_cast<std::uint32_t>(tensor);
  if (b < 0 || h < 0 || row < 0 || col < 0 || static_cast<std::uint32_t>(b) >= detail::kMaxBatch ||
      t >= detail::kMaxTensor)
    throw std::invalid_argument("inputs: coordinate out of range (b=" + std::to_string(b) +
                                ", h=" + std::to_string(h) + ", row=" + std::to_string(row) +
                                ", col=" + std::to_string(col) + "); batch must be < 2^24");
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
  check_coordinate(tensor, b, h, row, col);
  return sample_at(dist.params(), seed, tensor, b, h, row, col);
}

attention::Tensor make_tensor(int batch, int heads, int rows, int cols, const Distribution& dist,
                              std::uint64_t seed, TensorId tensor, numerics::Format format) {
  if (batch < 1 || heads < 1 || rows < 1 || cols < 1)
    throw std::invalid_argument(
        "make_tensor: every dimension must be >= 1 (batch=" + std::to_string(batch) +
        ", heads=" + std::to_string(heads) + ", rows=" + std::to_string(rows) +
        ", cols=" + std::to_string(cols) + ")");
  check_coordinate(tensor, batch - 1, heads - 1, rows - 1, cols - 1);
  const DistributionParams params = dist.params();
  attention::Tensor t(batch, heads, rows, cols);  // (B, H, N, d)
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          t.at(b, h, r, c) = input_at(params, seed, tensor, b, h, r, c, format);
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
