// Masks beyond the causal one, as PyTorch's scaled_dot_product_attention takes them: key padding,
// attention masks and additive biases, for every algorithm and the golden (rows/mask_hook.hpp
// says where the row functions apply them).
#pragma once

#include <memory>
#include <vector>

#include "attention/rows/mask_hook.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention {

struct Shape;

// An additive bias on the scaled scores, S_ij + bias_ij, bias = -inf where a key is masked (a
// boolean mask that keeps True is 0 / -inf). (batch, heads, rows, cols) with batch 1 or B, heads
// 1 or H, rows 1 or N_q, cols 1 or N_kv: an extent of 1 is broadcast over that dimension, as
// PyTorch broadcasts a mask of shape (B, 1, 1, S) or (L, S). Values are finite or -inf (NaN and
// +inf are refused: no kernel defines them). With Options::causal the causal rule applies as
// well (a key is visible when both allow it).
struct Mask {
  int batch = 1, heads = 1, rows = 1, cols = 1;
  std::vector<double> bias;  // (batch, heads, rows, cols), row-major
};

// Throws std::invalid_argument naming what is wrong (an extent that is neither 1 nor the
// problem's, a size that does not match the extents, a NaN or +inf and where it is).
void validate_mask(const Mask& mask, const Shape& shape);

// The mask as the score arithmetic of `policy` holds it: each bias rounded once to score_accum's
// compute format (an fp64 bias meets fp32 scores as an fp32 value on every path). Returns `mask`
// itself when no value changes (0 / -inf masks, fp64 arithmetic), else a rounded copy.
std::shared_ptr<const Mask> mask_for_policy(const std::shared_ptr<const Mask>& mask,
                                            const numerics::PrecisionPolicy& policy);

// The row functions' view of (batch b, head h): rows indexed from the sequence's first query.
// A null mask gives the null view (no mask).
rows::KeyMask key_mask(const Mask* mask, int b, int h);

}  // namespace attndev::attention
