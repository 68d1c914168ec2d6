// forward_flops: the closed form equals the sum over rows of the visibility rule.
#include <catch2/catch.hpp>

#include "attention/attention.hpp"
#include "attention/rows/mask.hpp"

TEST_CASE("forward_flops equals 4 B H d times the visible (row, key) pairs", "[attention][flops]") {
  using attndev::attention::Shape;
  for (int n_q : {0, 1, 2, 7, 64, 113}) {
    for (int n_kv : {0, 1, 3, 64, 75, 200}) {
      for (bool causal : {false, true}) {
        double pairs = 0;
        for (int i = 0; i < n_q; ++i)
          pairs += attndev::attention::rows::visible_count(i, n_q, n_kv, causal);
        const Shape shape{2, 3, n_q, n_kv, 5};
        INFO("n_q=" << n_q << " n_kv=" << n_kv << " causal=" << causal);
        CHECK(attndev::attention::forward_flops(shape, causal) == 4.0 * 2 * 3 * pairs * 5);
      }
    }
  }
  // 2^20 x 2^20 causal: exact in the closed form, no loop over a million rows.
  const Shape big{1, 1, 1 << 20, 1 << 20, 1};
  CHECK(attndev::attention::forward_flops(big, true) == 4.0 * (1048576.0 * 1048577.0 / 2));
}
