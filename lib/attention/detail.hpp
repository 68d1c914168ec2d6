// Internals shared by the algorithm files: the validated problem, the causal row extents, and the
// thread pool. Not part of the public API (attention.hpp is).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention::detail {

// Everything an algorithm needs, after validation and after the input stage has been applied:
// q, k, v hold R_input values (q already multiplied by the scale under ScalePlacement::query).
struct Problem {
  numerics::PrecisionPolicy policy;
  Shape shape;
  bool causal = false;
  int block_r = 64;
  int block_c = 64;
  int threads = 1;
  std::uint64_t schedule_seed = 0;
  // The softmax scale as a real number: used for reporting lse only.
  double scale = 1.0;
  // True when the scale was folded into Q (ScalePlacement::query): scores are not multiplied.
  bool scale_in_query = false;
  Tensor q;  // (B, H, N_q, d)
  Tensor k;  // (B, H, N_kv, d)
  Tensor v;  // (B, H, N_kv, d)

  // The scale as the score arithmetic holds it: a scalar in the score accumulator's format (a
  // kernel receives softmax_scale as a float; a framework multiplies by it in fp32 opmath).
  double score_scale() const { return numerics::round_to(policy.score_accum, scale); }
};

// Keys visible to query row i: j in [0, visible_count). Bottom-right aligned causal mask, the same
// rule as causal_visible() in attention.hpp (checked against it in the tests).
inline int visible_count(int i, int seq_q, int seq_kv, bool causal) {
  if (!causal) return seq_kv;
  const long n = static_cast<long>(i) + (seq_kv - seq_q) + 1;
  return static_cast<int>(std::clamp<long>(n, 0, seq_kv));
}

// Runs fn(item) for item in [0, n_items) on `threads` std::threads. Items are taken from a shared
// counter in order, or in a seeded shuffled order. The first exception thrown by any item is
// rethrown in the caller after all threads have joined.
void parallel_for(std::size_t n_items, int threads, std::uint64_t schedule_seed,
                  const std::function<void(std::size_t)>& fn);

// A work item of the forward pass: one block of query rows of one (batch, head).
struct RowBlock {
  int b, h, row_begin, row_end;
};

// (batch, head, block) items in (b, h, block) order for blocks of `rows` query rows.
std::size_t row_block_count(const Shape& shape, int rows);
RowBlock row_block(const Shape& shape, int rows, std::size_t item);

// The generic (reference) implementations: every operation a named *_in call in double. Each
// fills rows [row_begin, row_end) of one (b, h) of `out`.
void baseline_generic(const Problem& p, const RowBlock& rb, Output& out);
void flash1_generic(const Problem& p, const RowBlock& rb, Output& out);
void flash2_generic(const Problem& p, const RowBlock& rb, Output& out);

// The fast paths: whole forward pass (they prepare packed copies of K and V first).
enum class FastKind : unsigned char { none, f32, f64 };
FastKind fast_kind(Algorithm algorithm, const numerics::PrecisionPolicy& policy);
void baseline_fast(const Problem& p, FastKind kind, Output& out);
void flash2_fast(const Problem& p, FastKind kind, Output& out);

// scale * log2(e) rounded to the stats format (1 * log2(e) when the scale is folded into Q).
double flash2_scale_log2(const Problem& p);

// Rows of query processed per work item by the baseline (its numerics do not depend on it).
inline constexpr int kBaselineRowBlock = 16;

}  // namespace attndev::attention::detail
