// Deviation metrics: hand-computed cases, non-finite values, empty and mismatched input.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "metrics/compensated_sum.hpp"
#include "metrics/deviation.hpp"

using attndev::metrics::compare;
using attndev::metrics::Deviation;
using Catch::Detail::Approx;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("metrics of a hand-computed case", "[deviation]") {
  // diff = (0, 1, -2, 2): |diff| = (0, 1, 2, 2)
  const std::vector<double> ref = {1, 2, 4, -4};
  const std::vector<double> x = {1, 3, 2, -2};
  const Deviation d = compare(x, ref, 0.0);
  CHECK(d.count == 4);
  CHECK(d.max_abs == 2.0);
  CHECK(d.worst_index == 2);  // the first of the tied maxima
  CHECK(d.mean_abs == 1.25);
  // population std of (0,1,2,2): mean 1.25, squared deviations 1.5625+0.0625+0.5625+0.5625 = 2.75
  CHECK(d.std_abs == Approx(std::sqrt(2.75 / 4)).epsilon(1e-15));
  CHECK(d.rmse == Approx(std::sqrt(9.0 / 4)).epsilon(1e-15));
  CHECK(d.rel_l2 == Approx(3.0 / std::sqrt(37.0)).epsilon(1e-15));
  CHECK(d.max_rel == 0.5);  // 1/2, 2/4, 2/4
  // <x, ref> = 1 + 6 + 8 + 8 = 23; ||x|| = sqrt(18), ||ref|| = sqrt(37)
  CHECK(d.cos_sim == Approx(23.0 / std::sqrt(18.0 * 37.0)).epsilon(1e-15));
  CHECK(d.nan_count == 0);
  CHECK(d.inf_count == 0);
}

TEST_CASE("identical inputs have zero error and unit cosine", "[deviation]") {
  const std::vector<double> v = {0.5, -1.25, 3.0, 1e-300, 7e200};
  const Deviation d = compare(v, v, 0.0);
  CHECK(d.max_abs == 0);
  CHECK(d.rmse == 0);
  CHECK(d.rel_l2 == 0);
  CHECK(d.max_rel == 0);
  CHECK(d.cos_sim == 1.0);
  CHECK(d.worst_index == 0);
}

TEST_CASE("max_rel floor keeps tiny reference values from dominating", "[deviation]") {
  const std::vector<double> ref = {1e-12, 1.0};
  const std::vector<double> x = {2e-12, 1.001};
  CHECK(compare(x, ref, 0.0).max_rel == Approx(1.0));
  const Deviation floored = compare(x, ref, 1e-3);
  CHECK(floored.max_rel == Approx(1e-3).epsilon(1e-9));
  CHECK(floored.max_rel_floor == 1e-3);
  // A zero reference with no floor: any error is infinitely large relative to it.
  CHECK(std::isinf(compare(std::vector<double>{1e-9}, std::vector<double>{0.0}, 0.0).max_rel));
  CHECK_THROWS_AS(compare(x, ref, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(compare(x, ref, kNaN), std::invalid_argument);
}

TEST_CASE("NaN and inf are counted first and poison the metrics", "[deviation]") {
  const std::vector<double> ref = {1, 2, 3, 4};
  const Deviation nan = compare(std::vector<double>{1, kNaN, 3, kInf}, ref, 0.0);
  CHECK(nan.nan_count == 1);
  CHECK(nan.inf_count == 1);
  CHECK(std::isnan(nan.max_abs));
  CHECK(std::isnan(nan.mean_abs));
  CHECK(std::isnan(nan.rmse));
  CHECK(std::isnan(nan.rel_l2));
  CHECK(std::isnan(nan.cos_sim));
  CHECK(nan.worst_index == 1);

  const Deviation inf = compare(std::vector<double>{1, 2, -kInf, 4}, ref, 0.0);
  CHECK(inf.inf_count == 1);
  CHECK(inf.nan_count == 0);
  CHECK(std::isnan(inf.max_abs));
  CHECK(inf.worst_index == 2);

  // Infinities that agree in sign carry no error; of opposite sign they do.
  const std::vector<double> ref_inf = {1, kInf, 3};
  const Deviation same = compare(std::vector<double>{1, kInf, 3.5}, ref_inf, 0.0);
  CHECK(same.inf_count == 1);
  CHECK(same.max_abs == 0.5);
  CHECK(same.worst_index == 2);
  CHECK(std::isfinite(same.cos_sim));
  CHECK(std::isnan(compare(std::vector<double>{1, -kInf, 3}, ref_inf, 0.0).max_abs));
  // A NaN in the reference means the reference is broken: nothing can be measured.
  CHECK(std::isnan(compare(std::vector<double>{1, 2}, std::vector<double>{1, kNaN}, 0.0).rmse));
}

TEST_CASE("empty and mismatched inputs", "[deviation]") {
  const std::vector<double> none;
  const Deviation d = compare(none, none, 0.0);
  CHECK(d.count == 0);
  CHECK(d.worst_index == -1);
  CHECK(d.max_abs == 0);
  CHECK(d.cos_sim == 1.0);
  CHECK_THROWS_AS(compare(std::vector<double>{1, 2}, std::vector<double>{1}, 0.0),
                  std::invalid_argument);
}

TEST_CASE("zero vectors: rel_l2 and cosine conventions", "[deviation]") {
  const std::vector<double> zeros = {0, 0, 0};
  const std::vector<double> ones = {1, 1, 1};
  CHECK(compare(zeros, zeros, 0.0).rel_l2 == 0);
  CHECK(compare(zeros, zeros, 0.0).cos_sim == 1.0);
  CHECK(std::isinf(compare(ones, zeros, 0.0).rel_l2));
  CHECK(compare(ones, zeros, 0.0).cos_sim == 0.0);
  CHECK(compare(zeros, ones, 0.0).rel_l2 == 1.0);
}

TEST_CASE("metrics are scale-invariant where they should be and stable at extreme scales",
          "[deviation]") {
  const std::uint32_t seed = 777;
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  const int n = 100000;
  std::vector<double> ref(n), x(n);
  for (int i = 0; i < n; ++i) {
    ref[i] = normal(rng);
    x[i] = ref[i] + 1e-3 * normal(rng);
  }
  const Deviation same = compare(ref, ref, 0.0);
  CHECK(same.cos_sim == 1.0);  // exactly: identical outputs must not look slightly dissimilar
  CHECK(same.max_abs == 0.0);
  const Deviation base = compare(x, ref, 0.0);
  CHECK(base.rmse == Approx(1e-3).epsilon(0.02));  // sample rms of 1e5 N(0, 1e-6): +-0.5% (1 sd)
  CHECK(base.cos_sim < 1.0);
  CHECK(base.cos_sim > 0.999);
  // Multiplying both by a power of two is exact: relative metrics are unchanged, absolute ones
  // scale, and nothing overflows or underflows at 2^900 or 2^-900.
  for (int e : {900, -900}) {
    CAPTURE(e);
    std::vector<double> xs(n), rs(n);
    for (int i = 0; i < n; ++i) {
      xs[i] = std::ldexp(x[i], e);
      rs[i] = std::ldexp(ref[i], e);
    }
    const Deviation d = compare(xs, rs, 0.0);
    CHECK(d.rel_l2 == Approx(base.rel_l2).epsilon(1e-12));
    CHECK(d.cos_sim == Approx(base.cos_sim).epsilon(1e-12));
    CHECK(d.max_rel == Approx(base.max_rel).epsilon(1e-12));
    CHECK(d.rmse == Approx(std::ldexp(base.rmse, e)).epsilon(1e-12));
    CHECK(d.std_abs == Approx(std::ldexp(base.std_abs, e)).epsilon(1e-12));
    CHECK(d.worst_index == base.worst_index);
  }
  // The two-pass variance survives a large mean: |diff| = 1e8 + small noise.
  std::vector<double> shifted(n);
  for (int i = 0; i < n; ++i) shifted[i] = ref[i] + 1e8 + (i % 2 ? 1.0 : -1.0);
  const Deviation s = compare(shifted, ref, 0.0);
  CHECK(s.std_abs == Approx(1.0).epsilon(1e-6));
  CHECK(s.mean_abs == Approx(1e8).epsilon(1e-12));
}

TEST_CASE("the compensated sum recovers what plain addition rounds away and overflows to inf",
          "[deviation]") {
  using attndev::metrics::CompensatedSum;
  // 1 + 1e100 rounds the 1 away; the carry keeps it, so the sum ends at 2 (plain addition: 0).
  CompensatedSum<double> s;
  for (double x : {1.0, 1e100, 1.0, -1e100}) s.add(x);
  REQUIRE(s.value() == 2.0);
  CompensatedSum<long double> l;
  for (long double x : {1.0L, 1e4000L, 1.0L, -1e4000L}) l.add(x);
  REQUIRE(l.value() == 2.0L);
  // A sum past the largest double is inf, not inf - inf = NaN through the carry.
  CompensatedSum<double> big;
  big.add(1e308);
  big.add(1e308);
  big.add(1.0);
  REQUIRE(std::isinf(big.value()));
  REQUIRE(big.value() > 0);
}
