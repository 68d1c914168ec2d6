// Deviation of a result from a reference, computed in double (docs/CONTRIBUTING.md #9).
#pragma once

#include <cstdint>
#include <span>

namespace attndev::metrics {

struct Deviation {
  double max_abs = 0;   // max |x - ref|
  double mean_abs = 0;  // mean |x - ref|
  double std_abs = 0;   // population standard deviation of |x - ref|
  double rmse = 0;      // sqrt(mean (x - ref)^2)
  double rel_l2 = 0;    // ||x - ref||_2 / ||ref||_2 (0/0 -> 0)
  // ||x - ref||_1 / ||ref||_1 (0/0 -> 0): SageAttention's "relative L1" (Zhang et al.,
  // arXiv 2410.02367, Sec. 4; sum |O - O'| / sum |O|)
  double rel_l1 = 0;
  double max_rel = 0;  // max |x - ref| / max(|ref|, max_rel_floor)
  double max_rel_floor = 0;
  double cos_sim = 1;  // <x, ref> / (||x|| ||ref||); 1 when both are zero
  std::int64_t nan_count = 0;
  std::int64_t inf_count = 0;
  std::int64_t worst_index = -1;  // flat index of the max_abs element (-1 if empty)
  std::int64_t count = 0;
};

// Non-finite elements are counted, not folded into the sums: max_abs etc. become NaN when any
// element of x is NaN or inf where ref is finite, so a broken kernel never looks accurate.
Deviation compare(std::span<const double> x, std::span<const double> reference,
                  double max_rel_floor);

}  // namespace attndev::metrics
