// Wasserstein-1: scipy fixtures (test/data/wdist, scripts/make_wdist_fixtures.py), exact small
// cases, and a property check against an independent formula (quantile functions).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "io/tensor_file.hpp"
#include "metrics/wasserstein.hpp"
#include "build_paths.hpp"

namespace {

using attndev::metrics::wasserstein1;

const std::string kData = std::string(ATTNDEV_SOURCE_DIR) + "/test/data/wdist/";

const attndev::io::NamedTensor& find_tensor(const std::vector<attndev::io::NamedTensor>& ts,
                                            const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t;
  // A single .npy file names its tensor after itself: take it whatever the case calls it.
  REQUIRE(ts.size() == 1);
  return ts[0];
}

// W1 as the integral over t in (0, 1) of |Q_u(t) - Q_v(t)|, Q the quantile functions: the same
// number by another route (the CDF and quantile areas are equal), using breakpoints i/n and j/m
// compared as exact integers.
double w1_by_quantiles(std::vector<double> u, std::vector<double> v) {
  std::sort(u.begin(), u.end());
  std::sort(v.begin(), v.end());
  const std::int64_t n = static_cast<std::int64_t>(u.size());
  const std::int64_t m = static_cast<std::int64_t>(v.size());
  long double sum = 0;
  std::int64_t i = 0, j = 0;  // current quantile pieces: u[i] on (i/n, (i+1)/n], v[j] likewise
  std::int64_t prev_num = 0;  // previous breakpoint t = prev_num / (n m)
  while (i < n && j < m) {
    const std::int64_t next_u = (i + 1) * m;  // (i+1)/n in units of 1/(n m)
    const std::int64_t next_v = (j + 1) * n;
    const std::int64_t next = std::min(next_u, next_v);
    sum += static_cast<long double>(next - prev_num) *
           std::fabs(static_cast<long double>(u[i]) - v[j]);
    prev_num = next;
    if (next_u == next) ++i;
    if (next_v == next) ++j;
  }
  return static_cast<double>(sum / (static_cast<long double>(n) * m));
}

}  // namespace

TEST_CASE("wasserstein1 matches scipy.stats.wasserstein_distance on the committed fixtures",
          "[wasserstein]") {
  std::ifstream in(kData + "expected.json");
  REQUIRE(in.good());
  const nlohmann::json expected = nlohmann::json::parse(in);
  const auto& cases = expected.at("cases");
  REQUIRE(cases.size() >= 10);
  int compared = 0, elementwise = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("name");
    INFO("case " << name << " (" << c.at("file_a").get<std::string>() << " vs "
                 << c.at("file_b").get<std::string>() << ")");
    const auto ta = attndev::io::read_tensor_file(kData + c.at("file_a").get<std::string>());
    const auto tb = attndev::io::read_tensor_file(kData + c.at("file_b").get<std::string>());
    const auto& a = find_tensor(ta, c.at("tensor"));
    const auto& b = find_tensor(tb, c.at("tensor"));
    REQUIRE(static_cast<std::int64_t>(a.values.size()) == c.at("count_a").get<std::int64_t>());
    REQUIRE(static_cast<std::int64_t>(b.values.size()) == c.at("count_b").get<std::int64_t>());
    // W1 is shift-invariant, so its natural scale is the spread of the values, not their size
    // (the "offset" case sits at 1e6 with a spread of 1e-2).
    const auto [lo_a, hi_a] = std::minmax_element(a.values.begin(), a.values.end());
    const auto [lo_b, hi_b] = std::minmax_element(b.values.begin(), b.values.end());
    const double spread = std::max(*hi_a, *hi_b) - std::min(*lo_a, *lo_b);
    const bool same_shape = a.shape == b.shape;
    const auto d = attndev::metrics::tensor_distance(a.values, b.values, same_shape);
    const double w1_expected = c.at("w1");
    CAPTURE(d.w1, w1_expected, spread);
    CHECK(std::fabs(d.w1 - w1_expected) <= 1e-12 * spread);
    CHECK(w1_expected > 0);  // every fixture pair differs: a zero would compare nothing
    ++compared;
    CHECK(same_shape == c.contains("max_abs"));
    if (c.contains("max_abs")) {
      const double max_abs = c.at("max_abs"), rel_l2 = c.at("rel_l2");
      CAPTURE(d.max_abs, max_abs, d.rel_l2, rel_l2);
      CHECK(d.max_abs == max_abs);  // one subtraction of stored values: exact on both sides
      CHECK(std::fabs(d.rel_l2 - rel_l2) <= 1e-12 * rel_l2);
      ++elementwise;
    }
  }
  CHECK(compared == static_cast<int>(cases.size()));
  CHECK(elementwise >= 5);
}

TEST_CASE("wasserstein1: exact small cases", "[wasserstein]") {
  using V = std::vector<double>;
  CHECK(wasserstein1(V{0.0}, V{1.0}) == 1.0);
  CHECK(wasserstein1(V{3.0, -1.0, 2.0}, V{3.0, -1.0, 2.0}) == 0.0);
  CHECK(wasserstein1(V{0.0, 1.0}, V{1.0, 0.0, 0.0, 1.0}) == 0.0);  // same distribution, n != m
  CHECK(wasserstein1(V{0.0}, V{0.0, 1.0}) == 0.5);
  CHECK(wasserstein1(V{0.0, 1.0, 3.0}, V{5.0}) == (5.0 + 4.0 + 2.0) / 3.0);
  CHECK(wasserstein1(V{-2.0, -4.0}, V{-3.0}) == 1.0);
  // Shift by c moves every quantile by c.
  CHECK(wasserstein1(V{1.0, 2.0, 4.0, 8.0}, V{1.25, 2.25, 4.25, 8.25}) == 0.25);
  // Symmetric.
  CHECK(wasserstein1(V{0.0, 7.0}, V{1.0, 2.0, 3.0}) == wasserstein1(V{1.0, 2.0, 3.0}, V{0.0, 7.0}));
}

TEST_CASE("wasserstein1: NaN, infinities and empty samples", "[wasserstein]") {
  using V = std::vector<double>;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(std::isnan(wasserstein1(V{0.0, nan}, V{0.0, 1.0})));
  CHECK(std::isnan(wasserstein1(V{0.0}, V{})));
  CHECK(wasserstein1(V{}, V{}) == 0.0);
  // Matching infinities carry equal mass: the CDFs agree beyond the finite values.
  CHECK(wasserstein1(V{inf, 0.0}, V{1.0, inf}) == 0.5);
  CHECK(wasserstein1(V{-inf, 0.0}, V{-inf, 0.0}) == 0.0);
  CHECK(wasserstein1(V{inf}, V{0.0}) == inf);

  const auto d = attndev::metrics::tensor_distance(V{1.0, nan, inf}, V{1.0, 2.0, nan}, true);
  CHECK(d.nan_a == 1);
  CHECK(d.nan_b == 1);
  CHECK(d.inf_a == 1);
  CHECK(std::isnan(d.w1));
  CHECK(std::isnan(d.max_abs));  // never reported as the max over the non-NaN pairs only
}

TEST_CASE("wasserstein1 agrees with the quantile-function formula on random samples",
          "[wasserstein]") {
  const std::uint32_t seed = 12345;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> size(1, 300);
  std::uniform_int_distribution<int> small_int(-5, 5);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = size(rng), m = size(rng);
    std::vector<double> u(n), v(m);
    const bool ties = trial % 3 == 0;  // integer samples: many equal values
    for (double& x : u) x = ties ? small_int(rng) : normal(rng);
    for (double& x : v) x = ties ? small_int(rng) : 0.5 + 2.0 * normal(rng);
    const double got = wasserstein1(u, v);
    const double want = w1_by_quantiles(u, v);
    INFO("trial " << trial << " n=" << n << " m=" << m);
    CHECK(std::fabs(got - want) <= 1e-13 * std::max(1.0, want));
  }
}

TEST_CASE("tensor_distance and aggregate", "[wasserstein]") {
  using V = std::vector<double>;
  const auto d1 = attndev::metrics::tensor_distance(V{3.0, 4.0}, V{3.0, 5.0}, /*same_shape=*/true);
  CHECK(d1.max_abs == 1.0);
  CHECK(d1.rel_l2 == Approx(1.0 / 5.0).epsilon(1e-15));
  CHECK(d1.w1 == 0.5);
  const auto d2 = attndev::metrics::tensor_distance(V{0.0, 1.0, 2.0, 3.0}, V{2.0, 3.0},
                                                    /*same_shape=*/false);
  CHECK_FALSE(d2.same_shape);
  CHECK(std::isnan(d2.max_abs));
  CHECK(d2.w1 == 1.0);
  const auto z = attndev::metrics::tensor_distance(V{0.0}, V{0.0}, /*same_shape=*/true);
  CHECK(z.rel_l2 == 0.0);

  const std::vector<attndev::metrics::TensorDistance> parts{d1, d2};
  const auto g = attndev::metrics::aggregate(parts);
  CHECK(g.tensors == 2);
  CHECK(g.elements == 4 + 6);
  CHECK(g.w1_mean == Approx((4 * 0.5 + 6 * 1.0) / 10.0).epsilon(1e-15));
  CHECK(g.same_shape_tensors == 1);
  CHECK(g.max_abs == 1.0);
  CHECK(g.rel_l2 == Approx(1.0 / 5.0).epsilon(1e-15));
}
