// The acceptance rules of the CUDA backend as named checks on top of the one measurement path
// (docs/CONTRIBUTING.md #7, #8): scripts/gpu-check.sh (through attndev_cuda_check), the GPU test
// and the host tests of test/cuda all decide pass or fail here, with the golden, the deviations
// and the floor of measure.hpp rather than their own.
//
//   bit_identical          an output that claims the emulator's arithmetic (the faithful kernels,
//                          the device twins, the device inputs) equals its reference in every bit
//   within_baseline_rule   a kernel that does not (flash2-tc: the matrix unit's own summation,
//                          the hardware exp2): max|O - golden| <= 2 max|O_base - golden| + floor,
//                          O_base the same-format baseline on the same inputs, floor one unit
//                          roundoff of the output format at the golden's scale (max_rel_floor)
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "measure/measure.hpp"
#include "numerics/format.hpp"

namespace attndev::measure {

struct CheckResult {
  std::string rule;       // "bit_identical", "within_baseline_rule"
  bool compared = false;  // false: sizes differ or nothing to compare (never a pass)
  bool pass = false;
  std::string detail;  // one line: the numbers the verdict rests on
};

// Bit patterns, not values: -0 vs +0 and NaN payloads count as differences.
struct BitComparison {
  std::size_t compared = 0;
  std::size_t mismatches = 0;
  std::size_t first_mismatch = 0;
  double reference_value = 0, output_value = 0;
};
BitComparison compare_bits(std::span<const double> reference, std::span<const double> output);
CheckResult bit_identical(std::span<const double> output, std::span<const double> reference);

// The numbers of within_baseline_rule, measured with deviation() against the golden.
struct BaselineRule {
  metrics::Deviation kernel, baseline;  // each against the golden
  double floor = 0;                     // max_rel_floor(output format, golden.max_abs)
  double bound = 0;                     // 2 * baseline.max_abs + floor
};
BaselineRule baseline_rule(std::span<const double> output, std::span<const double> baseline,
                           const Golden& golden, numerics::Format output_format);
// Passes when both outputs are finite where the golden is (a NaN or inf makes max_abs NaN, which
// fails) and the kernel's max_abs is within the bound.
CheckResult within_baseline_rule(std::span<const double> output, std::span<const double> baseline,
                                 const Golden& golden, numerics::Format output_format);

}  // namespace attndev::measure
