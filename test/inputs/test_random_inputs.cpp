// The input generator: Philox against published vectors, coordinates as the only source of a
// value, distribution moments within statistical bounds, and one rounding to the input format.
// (Parsing a distribution from text is lib/experiment's: test/experiment/test_inputs.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "inputs/philox.hpp"
#include "inputs/random_inputs.hpp"
#include "numerics/round.hpp"

using namespace attndev;
using inputs::Distribution;
using inputs::TensorId;

namespace {

// Random123's tests/kat_vectors, philox4x32 10: counter words, key words -> output words.
struct PhiloxKat {
  inputs::PhiloxCounter counter;
  inputs::PhiloxKey key;
  inputs::PhiloxCounter expected;
};
constexpr PhiloxKat kPhiloxKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

static_assert(inputs::philox4x32_10(kPhiloxKats[0].counter, kPhiloxKats[0].key) ==
              kPhiloxKats[0].expected);

struct Moments {
  double mean = 0, var = 0, m4 = 0;  // central moments
  std::int64_t n = 0;
};

// Samples along one (tensor, b, h) plane in row-major order: n values of independent counters.
Moments moments_of(const Distribution& dist, std::uint64_t seed, int rows, int cols) {
  std::vector<double> xs;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      xs.push_back(inputs::sample(dist, seed, TensorId::q, 0, 0, r, c));
  Moments m;
  m.n = static_cast<std::int64_t>(xs.size());
  for (double x : xs) m.mean += x;
  m.mean /= m.n;
  for (double x : xs) {
    const double d = x - m.mean;
    m.var += d * d;
    m.m4 += d * d * d * d;
  }
  m.var /= m.n;
  m.m4 /= m.n;
  return m;
}

// The sample mean and variance each lie within 6 standard errors of the truth (a false failure
// has probability ~2e-9 per check). Standard errors use the true moments: sd(mean) = sigma/sqrt(n),
// sd(variance) ~ sqrt((mu4 - sigma^4) / n).
void check_moments(const Moments& m, double mean, double var, double mu4) {
  const double n = static_cast<double>(m.n);
  INFO("sample mean " << m.mean << " var " << m.var << " (n=" << m.n << "); true mean " << mean
                      << " var " << var);
  CHECK(std::fabs(m.mean - mean) <= 6.0 * std::sqrt(var / n));
  CHECK(std::fabs(m.var - var) <= 6.0 * std::sqrt((mu4 - var * var) / n));
}

}  // namespace

TEST_CASE("philox4x32_10 matches the Random123 known-answer vectors", "[inputs][philox]") {
  for (const PhiloxKat& kat : kPhiloxKats) {
    const auto out = inputs::philox4x32_10(kat.counter, kat.key);
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i, kat.counter[0], kat.key[0]);
      CHECK(out[i] == kat.expected[i]);
    }
  }
}

TEST_CASE("a value is a pure function of (seed, tensor, b, h, row, col)", "[inputs]") {
  const std::uint64_t seed = 0x5eed;
  CAPTURE(seed);
  const Distribution dist;
  const attention::Shape small{1, 1, 4, 4, 4};
  const attention::Shape large{2, 3, 100, 90, 100};
  const auto a = inputs::make_inputs(small, dist, seed, numerics::Format::fp64);
  const auto b = inputs::make_inputs(large, dist, seed, numerics::Format::fp64);
  const auto a2 = inputs::make_inputs(small, dist, seed, numerics::Format::fp64);
  CHECK(a.q.data == a2.q.data);
  CHECK(a.k.data == a2.k.data);
  CHECK(a.v.data == a2.v.data);
  int compared = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      CHECK(a.q.at(0, 0, r, c) == b.q.at(0, 0, r, c));
      CHECK(a.k.at(0, 0, r, c) == b.k.at(0, 0, r, c));
      CHECK(a.v.at(0, 0, r, c) == b.v.at(0, 0, r, c));
      CHECK(b.q.at(1, 2, r, c) == inputs::sample(dist, seed, TensorId::q, 1, 2, r, c));
      compared += 4;
    }
  CHECK(compared == 64);

  // Different seeds, tensors, heads and batches give different values (no shared counters).
  const double x = inputs::sample(dist, seed, TensorId::q, 0, 0, 1, 2);
  CHECK(x != inputs::sample(dist, seed + 1, TensorId::q, 0, 0, 1, 2));
  CHECK(x != inputs::sample(dist, seed, TensorId::k, 0, 0, 1, 2));
  CHECK(x != inputs::sample(dist, seed, TensorId::q, 0, 1, 1, 2));
  CHECK(x != inputs::sample(dist, seed, TensorId::q, 1, 0, 1, 2));
  CHECK(x != inputs::sample(dist, seed, TensorId::q, 0, 0, 2, 1));
  // High seed words matter too.
  CHECK(x != inputs::sample(dist, seed | (std::uint64_t{1} << 40), TensorId::q, 0, 0, 1, 2));
}

TEST_CASE("normal(mean, std) has the requested moments", "[inputs][stats]") {
  const std::uint64_t seed = 11;
  CAPTURE(seed);
  const Distribution d = Distribution::normal(0.5, 2.0);
  const Moments m = moments_of(d, seed, 512, 512);
  check_moments(m, 0.5, 4.0, 3.0 * 16.0);
  // Box-Muller from a 32-bit open uniform cannot exceed sqrt(-2 ln 2^-33) standard deviations.
  const double cap = std::sqrt(-2.0 * std::log(0x1p-33));
  for (int c = 0; c < 4096; ++c)
    CHECK(std::fabs(inputs::sample(d, seed, TensorId::v, 0, 0, 0, c) - 0.5) <= 2.0 * cap);
}

TEST_CASE(
    "uniform(lo, hi) has the requested moments and stays in the half-open interval from lo to hi",
    "[inputs][stats]") {
  const std::uint64_t seed = 12;
  CAPTURE(seed);
  const Distribution d = Distribution::uniform(-3.0, 1.0);
  const double w = 4.0;
  check_moments(moments_of(d, seed, 512, 512), -1.0, w * w / 12.0, w * w * w * w / 80.0);
  for (int c = 0; c < 100000; ++c) {
    const double x = inputs::sample(d, seed, TensorId::k, 0, 0, 0, c);
    if (!(x >= -3.0 && x < 1.0)) FAIL("uniform sample " << x << " outside [-3, 1) at col " << c);
  }
}

TEST_CASE("outlier = N(0,1) + N(0,s^2) * Bernoulli(p)", "[inputs][stats]") {
  const std::uint64_t seed = 13;
  CAPTURE(seed);
  const double s = 10.0, p = 0.01;
  const Distribution d{Distribution::Kind::outlier, 0.0, 1.0, s, p};
  // Var = 1 + p s^2; E X^4 = (1-p) 3 + p 3 (1 + s^2)^2 (mean 0).
  check_moments(moments_of(d, seed, 512, 512), 0.0, 1.0 + p * s * s,
                (1 - p) * 3.0 + p * 3.0 * (1 + s * s) * (1 + s * s));

  // The base normal and the Bernoulli come from separate counter words: the outlier sample minus
  // normal(0,1) at the same coordinate is non-zero exactly where the Bernoulli fired.
  const Distribution normal = Distribution::normal(0.0, 1.0);
  const int n = 1 << 18;
  int fired = 0;
  for (int i = 0; i < n; ++i)
    fired += inputs::sample(d, seed, TensorId::q, 0, 0, i >> 9, i & 511) !=
             inputs::sample(normal, seed, TensorId::q, 0, 0, i >> 9, i & 511);
  INFO("fired " << fired << " of " << n);
  CHECK(std::fabs(fired - n * p) <= 6.0 * std::sqrt(n * p * (1 - p)));

  // FA-3's defaults.
  const Distribution defaults{Distribution::Kind::outlier};
  CHECK(defaults.outlier_std == 10.0);
  CHECK(defaults.outlier_prob == 0.001);
}

TEST_CASE(
    "channel = N(0, std^2) + bias * c_col in Q and K, one c_col per column shared by the rows",
    "[inputs][stats]") {
  const std::uint64_t seed = 5;
  const Distribution d{Distribution::Kind::channel, 0.5, 4.0};
  const Distribution normal = Distribution::normal(0.0, 1.0);
  // x - 0.5 N(0,1) at the same coordinate is the column's bias: one value down each column,
  // different across columns, heads and tensors.
  auto bias = [&](TensorId t, int h, int row, int col) {
    return inputs::sample(d, seed, t, 0, h, row, col) -
           0.5 * inputs::sample(normal, seed, t, 0, h, row, col);
  };
  double sum = 0, sum_sq = 0;
  for (int col = 0; col < 256; ++col) {
    const double c = bias(TensorId::k, 0, 0, col);
    for (int row : {1, 17, 300}) CHECK(std::fabs(bias(TensorId::k, 0, row, col) - c) < 1e-12);
    CHECK(c != bias(TensorId::q, 0, 0, col));
    CHECK(c != bias(TensorId::k, 1, 0, col));
    sum += c;
    sum_sq += c * c;
  }
  // V carries no bias: it is the plain N(0, std^2) at every coordinate.
  for (int col = 0; col < 8; ++col)
    CHECK(inputs::sample(d, seed, TensorId::v, 0, 0, 3, col) ==
          0.5 * inputs::sample(normal, seed, TensorId::v, 0, 0, 3, col));
  // The biases are N(0, 16): over 256 columns the sample variance is within 30% of it.
  const double var = sum_sq / 256 - (sum / 256) * (sum / 256);
  INFO("variance of the channel biases " << var);
  CHECK(std::fabs(var - 16.0) < 0.3 * 16.0);
}

TEST_CASE("elements are uncorrelated across tensors and neighbours", "[inputs][stats]") {
  const std::uint64_t seed = 14;
  CAPTURE(seed);
  const Distribution d;
  const int n = 1 << 17;
  double qk = 0, adjacent = 0;
  for (int i = 0; i < n; ++i) {
    const int r = i >> 8, c = i & 255;
    const double q = inputs::sample(d, seed, TensorId::q, 0, 0, r, c);
    qk += q * inputs::sample(d, seed, TensorId::k, 0, 0, r, c);
    adjacent += q * inputs::sample(d, seed, TensorId::q, 0, 0, r, c + 256);
  }
  // For independent N(0,1), the mean of products has standard deviation 1/sqrt(n).
  CHECK(std::fabs(qk / n) <= 6.0 / std::sqrt(n));
  CHECK(std::fabs(adjacent / n) <= 6.0 / std::sqrt(n));
}

TEST_CASE("make_inputs rounds each value once to the input format", "[inputs]") {
  const std::uint64_t seed = 15;
  CAPTURE(seed);
  const attention::Shape shape{1, 2, 33, 17, 24};
  const Distribution d;
  for (numerics::Format f : {numerics::Format::bf16, numerics::Format::fp16,
                             numerics::Format::fp8_e4m3, numerics::Format::fp32}) {
    CAPTURE(numerics::format_name(f));
    const auto in = inputs::make_inputs(shape, d, seed, f);
    int changed = 0;
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 17; ++r)
        for (int c = 0; c < 24; ++c) {
          const double raw = inputs::sample(d, seed, TensorId::k, 0, h, r, c);
          const double got = in.k.at(0, h, r, c);
          CHECK(got == numerics::round_to(f, raw));
          CHECK(numerics::representable(f, got));
          changed += got != raw;
        }
    CHECK(changed > 0);  // the rounding was really applied (a double sample is never exactly bf16)
    CHECK(in.q.rows == 33);
    CHECK(in.v.rows == 17);
  }

  // fp8-e4m3 saturates at 448 rather than producing NaN (outliers of std 1000 overflow often).
  const Distribution wild{Distribution::Kind::outlier, 0.0, 1.0, 1000.0, 0.5};
  const auto in = inputs::make_inputs({1, 1, 64, 64, 16}, wild, seed, numerics::Format::fp8_e4m3);
  int saturated = 0;
  for (double x : in.q.data) {
    REQUIRE(std::isfinite(x));
    CHECK(std::fabs(x) <= 448.0);
    saturated += std::fabs(x) == 448.0;
  }
  CHECK(saturated > 0);
}

TEST_CASE("make_inputs rejects impossible shapes", "[inputs]") {
  const Distribution d;
  CHECK_THROWS_AS(inputs::make_inputs({1, 1, 0, 4, 4}, d, 0, numerics::Format::fp32),
                  std::invalid_argument);
  CHECK_THROWS_AS(inputs::make_inputs({1, 1, 4, 4, 0}, d, 0, numerics::Format::fp32),
                  std::invalid_argument);
  CHECK_THROWS_AS(inputs::make_inputs({-1, 1, 4, 4, 4}, d, 0, numerics::Format::fp32),
                  std::invalid_argument);
}

namespace {

// glibc's Box-Muller of the same words: what the generator computed before its log and cos became
// its own (sample.hpp), for the comparison below.
double libm_normal(std::uint32_t w0, std::uint32_t w1) {
  const double radius = std::sqrt(-2.0 * std::log(inputs::detail::open_unit(w0)));
  return radius * std::cos(2.0 * 3.14159265358979323846 * (static_cast<double>(w1) * 0x1p-32));
}

double ulps_apart(double x, double ref) {
  return std::fabs(x - ref) / std::ldexp(1.0, std::ilogb(ref) - 52);
}

}  // namespace

TEST_CASE("the generator's own log and cos are within a few ulps of long double", "[inputs]") {
  // Exhaustive over quadrant edges and a Philox stream of arguments; long double (64-bit
  // significand on x86) as the reference.
  double worst_log = 0, worst_cos = 0;
  int compared = 0;
  for (std::uint32_t i = 0; i < (1u << 16); ++i) {
    const auto w = inputs::philox4x32_10({i, 7, 0, 0}, {1, 2});
    for (std::uint32_t x : {w[0], w[1], i, i << 16, 0x40000000u + i, 0x80000000u - i}) {
      const double u = inputs::detail::open_unit(x);
      const double log_ref = static_cast<double>(std::log(static_cast<long double>(u)));
      if (log_ref != 0)
        worst_log = std::max(worst_log, ulps_apart(inputs::detail::log_positive(u), log_ref));
      const long double turn = static_cast<long double>(x) * 0x1p-32L;
      const double cos_ref =
          static_cast<double>(std::cos(2.0L * 3.141592653589793238462643383279503L * turn));
      // Near a zero of cos the reference's own argument rounding dominates: absolute there.
      const double err = std::fabs(inputs::detail::cos_turn(x) - cos_ref);
      worst_cos = std::max(worst_cos, std::fabs(cos_ref) > 1e-3 ? ulps_apart(cos_ref + err, cos_ref)
                                                                : err / 0x1p-53);
      ++compared;
    }
  }
  INFO("worst log " << worst_log << " ulp, worst cos " << worst_cos << " ulp over " << compared);
  CHECK(compared == 6 * (1 << 16));
  CHECK(worst_log <= 4.0);
  CHECK(worst_cos <= 4.0);
}

TEST_CASE("samples differ from glibc's Box-Muller in the last bits only", "[inputs]") {
  // How often a draw with the generator's own log and cos differs from one with glibc's, as a
  // double and after the rounding to each input format (docs/cuda.md quotes these rates).
  const int n = 1 << 20;
  int differ_f64 = 0, differ_f32 = 0, differ_bf16 = 0, differ_fp16 = 0;
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const auto w = inputs::philox4x32_10({static_cast<std::uint32_t>(i), 3, 0, 0}, {5, 6});
    const double ours = inputs::detail::standard_normal(w[0], w[1]);
    const double libm = libm_normal(w[0], w[1]);
    // Scaled by max(|x|, 1): where cos nearly vanishes glibc's own rounding of 2 pi u dominates.
    worst = std::max(worst, std::fabs(ours - libm) / std::max(std::fabs(libm), 1.0));
    differ_f64 += ours != libm;
    differ_f32 += numerics::round_to(numerics::Format::fp32, ours) !=
                  numerics::round_to(numerics::Format::fp32, libm);
    differ_bf16 += numerics::round_to(numerics::Format::bf16, ours) !=
                   numerics::round_to(numerics::Format::bf16, libm);
    differ_fp16 += numerics::round_to(numerics::Format::fp16, ours) !=
                   numerics::round_to(numerics::Format::fp16, libm);
  }
  std::printf(
      "own vs glibc Box-Muller over %d draws: %d differ as doubles (worst %.3g relative), "
      "%d in fp32, %d in fp16, %d in bf16\n",
      n, differ_f64, worst, differ_f32, differ_fp16, differ_bf16);
  CHECK(worst < 1e-14);             // a few ulps
  CHECK(differ_f64 < n);            // they are different functions...
  CHECK(differ_f32 <= n / 100000);  // ...that a 24-bit rounding almost never tells apart
  CHECK(differ_bf16 <= differ_f32);
}
