// Internals of the CPU emulator shared by the algorithm files: work items, the thread pool, and
// the entry points of the generic and fast paths. Not part of the public API (attention.hpp and
// problem.hpp are).
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention/attention.hpp"
#include "attention/parallel.hpp"
#include "attention/problem.hpp"
#include "attention/rows/mask.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention::detail {

using rows::visible_count;

using attention::parallel_for;  // the thread pool (parallel.hpp)

// A work item of the forward pass: one block of query rows of one (batch, head).
struct RowBlock {
  int b, h, row_begin, row_end;
};

// (batch, head, block) items in (b, h, block) order for blocks of `rows` query rows.
std::size_t row_block_count(const Shape& shape, int rows);
RowBlock row_block(const Shape& shape, int rows, std::size_t item);

// The generic (reference) path of baseline, flash1 and flash2: the row functions of rows/ in
// PolicyArith, every operation a named *_in call in double (generic.cpp).
void run_generic(Algorithm algorithm, const Problem& p, Output& out);

// The fast paths: the same row functions in NativeArith with the SIMD kernels (fast.cpp). They
// prepare packed copies of Q, K and V first. fast_kind() (fast_kinds.hpp, with the table of
// instantiations) decides where one exists.
enum class FastKind : unsigned char { none, f32, f64 };
void run_fast(Algorithm algorithm, const Problem& p, FastKind kind, Output& out);

// Rows of query processed per work item by the baseline (its numerics do not depend on it).
inline constexpr int kBaselineRowBlock = 16;

}  // namespace attndev::attention::detail
