// The named acceptance checks of lib/measure (measure/checks.hpp), which gpu-check, the GPU test
// and the host tests of test/cuda decide with: bit identity, and the 2x-baseline-plus-floor rule
// with lib/measure's golden scale and floor.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "measure/checks.hpp"

namespace {

using namespace attndev;
using numerics::Format;

// A golden of given values (its scale as golden_of would compute it).
measure::Golden golden_of_values(const std::vector<double>& o) {
  measure::Golden g;
  g.output.o = attention::Tensor(1, 1, static_cast<int>(o.size()), 1);  // (B, H, N, d)
  g.output.o.data = o;
  g.max_abs = measure::max_abs_finite(o);
  return g;
}

}  // namespace

TEST_CASE("measure checks: bit_identical tells -0 from +0 and counts every mismatch", "[measure]") {
  const std::vector<double> ref = {1.0, 0.0, -2.5, 3.0};
  CHECK(measure::bit_identical(ref, ref).pass);
  CHECK(measure::bit_identical(ref, ref).detail == "4 elements identical");
  std::vector<double> signed_zero = ref;
  signed_zero[1] = -0.0;
  const measure::CheckResult z = measure::bit_identical(signed_zero, ref);
  CHECK(z.compared);
  CHECK_FALSE(z.pass);
  std::vector<double> two_off = ref;
  two_off[2] = std::nextafter(-2.5, 0.0);
  two_off[3] = 3.5;
  const measure::BitComparison c = measure::compare_bits(ref, two_off);
  CHECK(c.mismatches == 2);
  CHECK(c.first_mismatch == 2);
  CHECK(c.reference_value == -2.5);
  // Sizes that differ are never compared, and never pass.
  const std::vector<double> two = {1.0, 0.0};
  const measure::CheckResult shorter = measure::bit_identical(two, ref);
  CHECK_FALSE(shorter.compared);
  CHECK_FALSE(shorter.pass);
  CHECK_FALSE(measure::bit_identical(std::vector<double>{}, std::vector<double>{}).pass);
}

TEST_CASE(
    "measure checks: the baseline rule is 2x the baseline's max_abs plus one unit "
    "roundoff at the golden's scale",
    "[measure]") {
  // Golden scale 4 (the inf is left out of the scale); bf16's unit roundoff is 2^-8, so the
  // floor is 4 * 2^-8 = 2^-6.
  const std::vector<double> gold = {1.0, -4.0, 2.0, 0.5};
  const measure::Golden g = golden_of_values(gold);
  const std::vector<double> base = {1.0 + 0x1p-5, -4.0, 2.0, 0.5};  // max_abs 2^-5
  const measure::BaselineRule rule = measure::baseline_rule(gold, base, g, Format::bf16);
  CHECK(rule.floor == 0x1p-6);
  CHECK(rule.bound == 2 * 0x1p-5 + 0x1p-6);
  std::vector<double> at_bound = gold;
  at_bound[2] += rule.bound;  // exactly at the bound: passes
  CHECK(measure::within_baseline_rule(at_bound, base, g, Format::bf16).pass);
  std::vector<double> beyond = gold;
  beyond[2] += 2 * rule.bound;
  const measure::CheckResult fail = measure::within_baseline_rule(beyond, base, g, Format::bf16);
  CHECK(fail.compared);
  CHECK_FALSE(fail.pass);
  // A NaN or an inf in the kernel's output fails whatever the numbers (max_abs is NaN).
  std::vector<double> nan = gold;
  nan[0] = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(measure::within_baseline_rule(nan, base, g, Format::bf16).pass);
  std::vector<double> inf = gold;
  inf[3] = std::numeric_limits<double>::infinity();
  CHECK_FALSE(measure::within_baseline_rule(inf, base, g, Format::bf16).pass);
  // Sizes that differ are not compared.
  const std::vector<double> one = {1.0};
  CHECK_FALSE(measure::within_baseline_rule(one, base, g, Format::bf16).compared);
}

TEST_CASE("measure checks: the golden's scale leaves non-finite elements out", "[measure]") {
  // The former check tool took max|O| over every element, so one inf in the golden made the
  // floor inf and every kernel pass.
  const std::vector<double> gold = {1.0, std::numeric_limits<double>::infinity(), 2.0};
  const measure::Golden g = golden_of_values(gold);
  CHECK(g.max_abs == 2.0);
  CHECK(measure::max_rel_floor(Format::fp16, g.max_abs) == 2.0 * 0x1p-11);
}
