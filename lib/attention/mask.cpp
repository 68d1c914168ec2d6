#include "attention/mask.hpp"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "attention/attention.hpp"
#include "numerics/round.hpp"

namespace attndev::attention {

namespace {

void require_extent(int got, int full, const char* what, const char* name) {
  if (got == 1 || got == full) return;
  throw std::invalid_argument("mask: " + std::string(what) + " extent is " + std::to_string(got) +
                              "; it must be 1 (broadcast) or the " + name + " " +
                              std::to_string(full));
}

}  // namespace

void validate_mask(const Mask& m, const Shape& s) {
  require_extent(m.batch, s.batch, "batch", "batch size");
  require_extent(m.heads, s.heads, "heads", "number of heads");
  require_extent(m.rows, s.seq_q, "query (rows)", "query length N_q");
  require_extent(m.cols, s.seq_kv, "key (cols)", "key length N_kv");
  const std::size_t expected = checked_elements(m.batch, m.heads, m.rows, m.cols);
  if (m.bias.size() != expected)
    throw std::invalid_argument("mask: " + std::to_string(m.bias.size()) + " values for extents (" +
                                std::to_string(m.batch) + ", " + std::to_string(m.heads) + ", " +
                                std::to_string(m.rows) + ", " + std::to_string(m.cols) +
                                ") = " + std::to_string(expected));
  for (std::size_t e = 0; e < m.bias.size(); ++e) {
    const double x = m.bias[e];
    if (!std::isnan(x) && x != INFINITY) continue;
    const std::size_t col = e % m.cols, row = e / m.cols % m.rows;
    throw std::invalid_argument("mask: " + std::string(std::isnan(x) ? "NaN" : "+inf") +
                                " at flat index " + std::to_string(e) + " (query " +
                                std::to_string(row) + ", key " + std::to_string(col) +
                                "); a mask holds finite biases or -inf (masked)");
  }
}

std::shared_ptr<const Mask> mask_for_policy(const std::shared_ptr<const Mask>& mask,
                                            const numerics::PrecisionPolicy& policy) {
  if (!mask) return mask;
  const numerics::Format f = policy.compute(numerics::Stage::score_accum);
  std::shared_ptr<Mask> rounded;
  for (std::size_t e = 0; e < mask->bias.size(); ++e) {
    const double x = mask->bias[e];
    const double r = numerics::round_to(f, x);
    if (r == x || (std::isnan(r) && std::isnan(x))) continue;
    if (!rounded) rounded = std::make_shared<Mask>(*mask);
    rounded->bias[e] = r;
  }
  if (!rounded) return mask;
  return rounded;
}

rows::KeyMask key_mask(const Mask* m, int b, int h) {
  if (m == nullptr) return {};
  const long row_stride = m->rows == 1 ? 0 : m->cols;
  const long col_stride = m->cols == 1 ? 0 : 1;
  const std::size_t bb = m->batch == 1 ? 0 : static_cast<std::size_t>(b);
  const std::size_t hh = m->heads == 1 ? 0 : static_cast<std::size_t>(h);
  const std::size_t offset = (bb * m->heads + hh) * static_cast<std::size_t>(m->rows) * m->cols;
  return {m->bias.data() + offset, row_stride, col_stride};
}

}  // namespace attndev::attention
