#include "attention/detail.hpp"
namespace attndev::attention::detail {
void baseline_fast(const Problem& p, FastKind, Output& out) {
  const std::size_t items = row_block_count(p.shape, kBaselineRowBlock);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t it) { baseline_generic(p, row_block(p.shape, kBaselineRowBlock, it), out); });
}
void flash2_fast(const Problem& p, FastKind, Output& out) {
  const std::size_t items = row_block_count(p.shape, p.block_r);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t it) { flash2_generic(p, row_block(p.shape, p.block_r, it), out); });
}
}
