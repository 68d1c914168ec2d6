// exp2_f32 / exp_f32 / exp2_f64 / exp_f64: accuracy in ulp against long double exp2l/expl over
// dense sweeps (every float in the range with a stride; random doubles), special values, and
// gradual underflow. The measured maxima are printed; docs/formats.md reports them.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>

#include "numerics/math.hpp"
#include "numerics/oracle.hpp"

namespace nt = attndev::numerics::testing;
using namespace attndev::numerics;

namespace {

// Error of got against the exact value in units of the last place of the result format (ulp of
// the exact value; subnormal ulp below the normal range). Overflow must match exactly.
long double ulp_error(long double exact, long double got, int fraction_bits, int min_exponent) {
  if (std::isinf(got) || std::isinf(exact)) return got == exact ? 0.0L : INFINITY;
  int e = 0;
  std::frexp(exact, &e);
  const int binade = std::max(e - 1, min_exponent);
  return std::fabs(got - exact) / std::ldexp(1.0L, binade - fraction_bits);
}

long double exact_overflow_aware(long double v, long double max) {
  return v > max ? INFINITY : v;  // the exact value beyond max rounds to inf at any ulp error
}

struct Sweep {
  long double max_ulp = 0;
  double worst_x = 0;
  long long points = 0;
  void add(double x, long double err) {
    ++points;
    if (err > max_ulp) {
      max_ulp = err;
      worst_x = x;
    }
  }
};

}  // namespace

TEST_CASE("exp2_f32 and exp_f32 within 1 ulp over every float in range (strided)", "[math]") {
  Sweep s2, se;
  for (std::uint32_t u = 0; u < 0xFF800000u; u += 257) {
    const float x = float_from_bits(u);
    if (std::fabs(x) <= 150.0f || (x > 0 && x <= 129.0f)) {
      const long double exact = exact_overflow_aware(exp2l(x), FLT_MAX + 0x1p103L);
      s2.add(x, ulp_error(exact, exp2_f32(x), 23, -126));
    }
    if (x >= -104.0f && x <= 89.0f) {
      const long double exact = exact_overflow_aware(expl(x), FLT_MAX + 0x1p103L);
      se.add(x, ulp_error(exact, exp_f32(x), 23, -126));
    }
  }
  std::cout << "exp2_f32: max " << static_cast<double>(s2.max_ulp) << " ulp at x=" << s2.worst_x
            << " over " << s2.points << " floats in [-150, 129]\n";
  std::cout << "exp_f32: max " << static_cast<double>(se.max_ulp) << " ulp at x=" << se.worst_x
            << " over " << se.points << " floats in [-104, 89]\n";
  REQUIRE(s2.points > 5'000'000);
  REQUIRE(se.points > 5'000'000);
  CHECK(s2.max_ulp <= 1.0L);
  CHECK(se.max_ulp <= 1.0L);
}

TEST_CASE("exp2_f64 and exp_f64 within 1.5 ulp on random doubles", "[math]") {
  std::mt19937_64 rng(nt::test_seed("exp f64 sweep", 0x5eed0003));
  std::uniform_real_distribution<double> wide2(-1080.0, 1025.0), wide(-746.0, 710.0),
      near(-2.0, 2.0);
  Sweep s2, se;
  const long double max_plus_half = 0x1.fffffffffffff8p1023L;
  for (int i = 0; i < 2'000'000; ++i) {
    const double x2 = i % 2 ? wide2(rng) : near(rng);
    s2.add(x2, ulp_error(exact_overflow_aware(exp2l(x2), max_plus_half), exp2_f64(x2), 52, -1022));
    const double xe = i % 2 ? wide(rng) : near(rng);
    se.add(xe, ulp_error(exact_overflow_aware(expl(xe), max_plus_half), exp_f64(xe), 52, -1022));
  }
  std::cout << "exp2_f64: max " << static_cast<double>(s2.max_ulp)
            << " ulp at x=" << nt::hex(s2.worst_x) << " over " << s2.points << " doubles\n";
  std::cout << "exp_f64: max " << static_cast<double>(se.max_ulp)
            << " ulp at x=" << nt::hex(se.worst_x) << " over " << se.points << " doubles\n";
  REQUIRE(s2.points == 2'000'000);
  CHECK(s2.max_ulp <= 1.5L);
  CHECK(se.max_ulp <= 1.5L);
}

TEST_CASE("exp special values and underflow", "[math]") {
  const float inf_f = std::numeric_limits<float>::infinity();
  const double inf = std::numeric_limits<double>::infinity();
  for (float (*fn)(float) : {exp2_f32, exp_f32}) {
    CHECK(fn(-inf_f) == 0.0f);
    CHECK(!std::signbit(fn(-inf_f)));
    CHECK(fn(inf_f) == inf_f);
    CHECK(std::isnan(fn(std::nanf(""))));
    CHECK(fn(-1e30f) == 0.0f);  // online softmax: exp2(-inf - m) and masked scores
    CHECK(fn(1e30f) == inf_f);
    CHECK(fn(0.0f) == 1.0f);
    CHECK(fn(-0.0f) == 1.0f);
  }
  for (double (*fn)(double) : {exp2_f64, exp_f64}) {
    CHECK(fn(-inf) == 0.0);
    CHECK(!std::signbit(fn(-inf)));
    CHECK(fn(inf) == inf);
    CHECK(std::isnan(fn(std::nan(""))));
    CHECK(fn(-1e30) == 0.0);
    CHECK(fn(1e300) == inf);
    CHECK(fn(0.0) == 1.0);
  }
  // Exact powers of two, through the subnormal range down to the last one, then 0.
  for (int k = -149; k <= 127; ++k) CHECK(exp2_f32(static_cast<float>(k)) == std::ldexp(1.0f, k));
  CHECK(exp2_f32(-150.0f) == 0.0f);  // 2^-150 is a tie between 0 and 2^-149: even
  CHECK(exp2_f32(-149.9f) == 0x1p-149f);
  CHECK(exp2_f32(128.0f) == inf_f);
  for (int k = -1074; k <= 1023; ++k) CHECK(exp2_f64(static_cast<double>(k)) == std::ldexp(1.0, k));
  CHECK(exp2_f64(-1075.0) == 0.0);
  CHECK(exp2_f64(1024.0) == inf);
  CHECK(exp_f64(-745.0) > 0.0);  // e^-745 ~ 4.9e-324: the last subnormal
  CHECK(exp_f64(-746.0) == 0.0);
  CHECK(exp_f64(709.7) < inf);
  CHECK(exp_f64(709.8) == inf);
  CHECK(exp_f32(88.7f) < inf_f);
  CHECK(exp_f32(88.8f) == inf_f);
  // exp_in rounds the fp32 evaluation once to the stage format.
  CHECK(exp_in(Format::bf16, 1.0) == round_to(Format::bf16, static_cast<double>(exp_f32(1.0f))));
  CHECK(exp2_in(Format::fp64, 0.5) == exp2_f64(0.5));
}
