// Ulp distances in each output format, and the element-level comparison built on them.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "metrics/ulp.hpp"
#include "numerics/encode.hpp"

using namespace attndev;
using numerics::Format;

namespace {

// The next representable value of `format` above x (x representable), from the bit patterns.
double next_up(Format format, double x) {
  const std::uint64_t bits = numerics::encode(format, x);
  const int step_shift = format == Format::tf32 ? 13 : 0;
  if (x >= 0) return numerics::decode(format, bits + (std::uint64_t{1} << step_shift));
  return numerics::decode(format, bits - (std::uint64_t{1} << step_shift));
}

}  // namespace

TEST_CASE("neighbouring values of a format are one ulp apart", "[metrics][ulp]") {
  for (Format f : {Format::bf16, Format::fp16, Format::tf32, Format::fp32, Format::fp64}) {
    CAPTURE(numerics::format_name(f));
    for (double x : {1.0, -3.5, 0.015625, 1000.0, -0.1}) {
      const double r = numerics::round_to(f, x);
      const double up = next_up(f, r);
      CHECK(up != r);
      CHECK(metrics::ulp_distance(r, up, f) == 1);
      CHECK(metrics::ulp_distance(up, r, f) == 1);
      CHECK(metrics::ulp_distance(r, next_up(f, up), f) == 2);
      CHECK(metrics::ulp_distance(r, r, f) == 0);
    }
  }
}

TEST_CASE("ulps count across zero, at the subnormals and up to infinity", "[metrics][ulp]") {
  const double tiny = numerics::traits(Format::bf16).min_subnormal();
  CHECK(metrics::ulp_distance(0.0, -0.0, Format::bf16) == 0);
  CHECK(metrics::ulp_distance(tiny, -tiny, Format::bf16) == 2);
  CHECK(metrics::ulp_distance(tiny, 0.0, Format::bf16) == 1);
  const double max = numerics::traits(Format::fp16).max_finite;
  CHECK(metrics::ulp_distance(max, std::numeric_limits<double>::infinity(), Format::fp16) == 1);
  // 1 and 2 are 2^7 bf16 steps apart (7 fraction bits), 2^10 fp16 steps.
  CHECK(metrics::ulp_distance(1.0, 2.0, Format::bf16) == 128);
  CHECK(metrics::ulp_distance(1.0, 2.0, Format::fp16) == 1024);
  // A value between two bf16 numbers is rounded to bf16 first.
  CHECK(metrics::ulp_distance(1.0 + 0x1p-9, 1.0, Format::bf16) == 0);
}

TEST_CASE("compare_ulps: identical fraction, histogram, mean, non-comparable", "[metrics][ulp]") {
  const Format f = Format::bf16;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> ref = {1.0, 2.0, -1.0, 0.5, 4.0, 1.0, 3.0};
  std::vector<double> x = ref;
  x[1] = next_up(f, 2.0);                           // 1 ulp
  x[2] = next_up(f, next_up(f, next_up(f, -1.0)));  // 3 ulps (toward -inf)
  x[3] = 0.5 + 100 * 0x1p-8;                        // 100 ulps of bf16 in [0.5, 1) (2^-8 each)
  x[6] = nan;                                       // not comparable
  const metrics::UlpComparison c = metrics::compare_ulps(x, ref, f);
  CHECK(c.count == 7);
  CHECK(c.identical == 3);
  CHECK(c.identical_fraction == Approx(3.0 / 7));
  CHECK(c.max_ulp == 100);
  CHECK(c.not_comparable == 1);
  CHECK(c.mean_ulp == Approx((0 + 1 + 3 + 100 + 0 + 0) / 6.0));
  CHECK(c.histogram[0] == 3);
  CHECK(c.histogram[1] == 1);
  CHECK(c.histogram[3] == 1);
  CHECK(c.histogram[7] == 1);
  CHECK(c.histogram_text() == "0:3 1:1 3-4:1 65-256:1 n/a:1");

  const metrics::UlpComparison same = metrics::compare_ulps(ref, ref, f);
  CHECK(same.identical_fraction == 1.0);
  CHECK(same.max_ulp == 0);
  CHECK(same.histogram_text() == "0:7");
  CHECK_THROWS_AS(metrics::compare_ulps(x, std::vector<double>{1.0}, f), std::invalid_argument);
}
