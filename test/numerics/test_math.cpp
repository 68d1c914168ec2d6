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

// PyTorch's vectorized exp_u20 (AVX2, numerics::exp_u20_f32), against its own results. Produced
// with PyTorch 2.15.0 (pip wheel, AVX2 kernels, one thread) by build/venv-torch: the CPU flash
// kernel (F.scaled_dot_product_attention under SDPBackend.FLASH_ATTENTION, fp32, scale 1) on one
// query row q = e_0 and 8 keys k_j = s_j e_0 (one full vector of 8 lanes, so exp_u20 evaluates
// every p) with s = (0, x, -1000 x 6), V = (e_0, e_1, 0, ...): p = (1, exp_u20(x), 0, ...), and
// the output is O_0 = 1/l, O_1 = p_1 * (1/l) in fp32, l = 1 + p_1. The value below is the one
// float p_1 with fl(1/fl(1 + p_1)) == O_0 and fl(p_1 * O_0) == O_1 (unique for every x listed;
// x = -0.75 was left out: two floats fit). exp_u20 is not e^x: e.g. e^-1 = 0x1.78b56362...p-2 and
// e^-87 = 1.6e-38 is normal, but exp_u20(-87) = 0 (its 2^(n-1) underflows at n = -126).
TEST_CASE("exp_u20_f32 reproduces PyTorch's exp_u20 (AVX2)", "[math][torch]") {
  struct Known {
    float x, torch;
  };
  constexpr Known kKnown[] = {
      {-0.0f, 0x1p+0f},
      {-9.999999974752427e-07f, 0x1.ffffdep-1f},
      {-0.009999999776482582f, 0x1.fae7dp-1f},
      {-0.10000000149011612f, 0x1.cf46d8p-1f},
      {-0.25f, 0x1.8ebefap-1f},
      {-0.30000001192092896f, 0x1.7b4c88p-1f},
      {-0.5f, 0x1.368b2ep-1f},
      {-0.6931471824645996f, 0x1p-1f},
      {-1.0f, 0x1.78b566p-2f},
      {-1.5f, 0x1.c8f876p-3f},
      {-2.0f, 0x1.152aaap-3f},
      {-3.299999952316284f, 0x1.2e259cp-5f},
      {-3.5f, 0x1.eec102p-6f},
      {-5.0f, 0x1.b993fcp-8f},
      {-10.0f, 0x1.7cd79ep-15f},
      {-17.25f, 0x1.14f49ep-25f},
      {-30.0f, 0x1.a56e0cp-44f},
      {-50.0f, 0x1.d257d8p-73f},
      {-80.0f, 0x1.7fd97cp-116f},
      {-87.0f, 0.0f},
      {-87.5f, 0.0f},
      {-100.0f, 0.0f},
  };
  for (const Known& k : kKnown) {
    INFO("x = " << k.x);
    CHECK(bits_of(exp_u20_f32(k.x)) == bits_of(k.torch));
  }
  CHECK(exp_u20_f32(-INFINITY) == 0.0f);  // a masked score
  // Not e^x: the polynomial is ~20 ulp off at worst, and differs from exp_f32 here.
  CHECK(exp_u20_f32(-1.0f) != exp_f32(-1.0f));
}

// PyTorch's fexp_u20 (AVX2, numerics::fexp_u20_f32), the exp its CPU flash kernel uses where P is
// stored in bf16/fp16. Its outputs cannot be read back bit for bit through that kernel (O is
// bf16/fp16), so these values come from an independent transcription of vec256_float.h's
// sequence in numpy (float32 operations, fma as an exact float64 product and sum rounded once;
// a scratch script, not checked in), which reproduced PyTorch's bf16/fp16 outputs with K = V = I;
// the checked-in fixtures (test_torch_fixtures.cpp) check the function end to end against
// PyTorch, where it decides which P round up or down.
TEST_CASE("fexp_u20_f32 follows PyTorch's fexp_u20 sequence (AVX2)", "[math][torch]") {
  struct Known {
    float x, expected;
  };
  constexpr Known kKnown[] = {
      {0.0f, 0x1.fff9p-1f},  // not 1: the bit trick's correction leaves e^0 slightly below
      {-9.999999974752427e-07f, 0x1.fff9p-1f},
      {-0.009999999776482582f, 0x1.fae4p-1f},
      {-0.10000000149011612f, 0x1.cf4ep-1f},
      {-0.25f, 0x1.8ebb8p-1f},
      {-0.5f, 0x1.368d8p-1f},
      {-0.6931471824645996f, 0x1.fff9p-2f},
      {-1.0f, 0x1.78afp-2f},
      {-2.0f, 0x1.1531p-3f},
      {-5.0f, 0x1.b999p-8f},
      {-10.0f, 0x1.7cd18p-15f},
      {-30.0f, 0x1.a56f8p-44f},
      {-80.0f, 0x1.7fd38p-116f},
      {-87.0f, 0x1.66668p-126f},
      {-87.5f, 0.0f},  // below ln(FLT_MIN): 0
      {-100.0f, 0.0f},
  };
  for (const Known& k : kKnown) {
    INFO("x = " << k.x);
    CHECK(bits_of(fexp_u20_f32(k.x)) == bits_of(k.expected));
  }
  CHECK(fexp_u20_f32(-INFINITY) == 0.0f);
  CHECK(std::isinf(fexp_u20_f32(89.0f)));
  // Within a bf16 ulp of e^x over the softmax range (its stated accuracy), never exactly exp_u20.
  for (float x = -80.0f; x <= 0.0f; x += 0.37f) {
    const double exact = std::exp(static_cast<double>(x));
    INFO("x = " << x);
    CHECK(std::fabs(fexp_u20_f32(x) - exact) <= exact * 0x1p-8);
  }
}
