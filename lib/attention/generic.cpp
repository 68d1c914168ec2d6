// The generic (reference) path: every algorithm's row function (rows/) in PolicyArith, each
// operation a named numerics *_in call in double, over work items of (batch, head, Q block).
#include <stdexcept>

#include "attention/generic_rows.hpp"

namespace attndev::attention::detail {

void run_generic(Algorithm algorithm, const Problem& p, Output& out) {
  const int rows = algorithm == Algorithm::baseline ? kBaselineRowBlock : p.block_r;
  const std::size_t items = row_block_count(p.shape, rows);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const RowBlock rb = row_block(p.shape, rows, item);
    switch (algorithm) {
      case Algorithm::baseline:
        baseline_generic_rows(p, p.q, p.k, p.v, rows::NoDequant{}, rb, out);
        break;
      case Algorithm::flash1:
        flash1_generic_rows(p, rb, out);
        break;
      case Algorithm::flash2:
        flash2_generic_rows(p, p.q, p.k, p.v, rows::NoDequant{}, rb, out);
        break;
      default:
        throw std::logic_error("run_generic: fp8 algorithms run through run_fp8");
    }
  });
}

}  // namespace attndev::attention::detail
