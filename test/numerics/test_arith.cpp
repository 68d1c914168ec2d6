// add_in / mul_in / div_in / fma_in / mac_in against exact __float128 arithmetic, on random
// operands of the format itself and of wider formats (where the sticky term decides ties).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>

#include "numerics/arith.hpp"
#include "numerics/encode.hpp"
#include "numerics/oracle.hpp"
#include "test_scale.hpp"

namespace nt = attndev::numerics::testing;
using namespace attndev::numerics;
using Quad = __float128;

namespace {

// Rounds an exact quad value to f by locating its two neighbours on f's grid and comparing with
// their midpoint in quad (exact: every value involved has far fewer than 113 bits).
double oracle_round_quad(Format f, Quad q) {
  const FormatTraits t = traits(f);
  if (q == 0) return 0.0;
  const bool negative = q < 0;
  const Quad a = negative ? -q : q;
  int e2 = 0;
  std::frexp(static_cast<double>(a), &e2);
  int binade = e2 - 1;
  if (static_cast<Quad>(std::ldexp(1.0, binade)) > a) --binade;  // double rounded up to 2^k
  if (binade < t.min_exponent) binade = t.min_exponent;
  const Quad quantum = std::ldexp(1.0, binade - t.fraction_bits);
  if (a / quantum > static_cast<Quad>(1ull << 62)) return negative ? -INFINITY : INFINITY;
  const unsigned long long units = static_cast<unsigned long long>(a / quantum);  // floor
  const Quad lo = units * quantum, mid = lo + quantum / 2;
  const Quad r = a < mid ? lo : a > mid ? lo + quantum : (units % 2 == 0 ? lo : lo + quantum);
  double out = static_cast<double>(r);
  if (out > t.max_finite) out = t.has_inf ? INFINITY : NAN;
  return negative ? -out : out;
}

// Operands: values of `operand_format` with log-uniform magnitudes around 1.
double operand(std::mt19937_64& rng, Format operand_format, int lo, int hi) {
  return round_to(operand_format, nt::log_uniform_double(rng, lo, hi), Overflow::saturate);
}

// Quad sum is exact when the TwoSum error in quad is zero; samples where it is not are skipped.
bool exact_sum(Quad x, Quad y, Quad& s) {
  s = x + y;
  const Quad bb = s - x;
  return (x - (s - bb)) + (y - bb) == 0;
}

}  // namespace

TEST_CASE("add/sub/mul/div/fma in every format, operands of the format and wider", "[arith]") {
  std::mt19937_64 rng(nt::test_seed("arith", 0x5eed0004));
  const Format targets[] = {Format::fp32, Format::tf32,     Format::fp16,
                            Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2};
  for (Format target : targets) {
    // Operands in the target itself, in fp32 (wider) and in fp64 (sticky case).
    for (Format source : {target, Format::fp32, Format::fp64}) {
      const FormatTraits t = traits(target);
      const int lo = std::max(t.min_exponent - t.fraction_bits, -60),
                hi = std::min(t.max_exponent, 60);
      long long compared = 0, skipped = 0;
      int bad = 0;
      auto check = [&](const char* op, double got, double want, double a, double b) {
        ++compared;
        if (!nt::same_value(got, want) && ++bad <= 5) {
          UNSCOPED_INFO(op << " in " << t.name << " a=" << nt::hex(a) << " b=" << nt::hex(b)
                           << " got=" << nt::hex(got) << " want=" << nt::hex(want));
        }
      };
      for (std::size_t i = 0; i < attndev::test::scaled_count(200'000); ++i) {
        const double a = operand(rng, source, lo / 2, hi / 2);
        const double b = operand(rng, source, lo / 2, hi / 2);
        const double c = operand(rng, source, lo, hi);
        Quad s;
        if (exact_sum(a, b, s)) {
          check("add", add_in(target, a, b), oracle_round_quad(target, s), a, b);
          check("sub", sub_in(target, a, -b), oracle_round_quad(target, s), a, b);
        } else {
          ++skipped;
        }
        const Quad p = static_cast<Quad>(a) * b;  // exact: 106 bits
        check("mul", mul_in(target, a, b), oracle_round_quad(target, p), a, b);
        if (exact_sum(p, c, s)) {
          check("fma", fma_in(target, a, b, c), oracle_round_quad(target, s), a, b);
        } else {
          ++skipped;
        }
        // Division: the double quotient is within half a double ulp, so only an exact midpoint
        // of the target needs the exact comparison a vs mid * b (exact in quad).
        const double d = a / b;
        double want = nt::oracle_round(target, d, default_overflow(target));
        const double r_lo =
            nt::oracle_round(target, std::nextafter(d, 0.0), default_overflow(target));
        const double r_hi =
            nt::oracle_round(target, std::nextafter(d, d * 2), default_overflow(target));
        if (r_lo != r_hi && std::isfinite(d) && d != 0.0) {
          const Quad exact_vs_mid = static_cast<Quad>(a) - static_cast<Quad>(d) * b;
          const bool above = (exact_vs_mid > 0) == (b > 0);
          if (exact_vs_mid != 0)
            want = (above == (d > 0)) ? (d > 0 ? r_hi : r_lo) : (d > 0 ? r_lo : r_hi);
        }
        check("div", div_in(target, a, b), want, a, b);
      }
      INFO(t.name << " operands " << traits(source).name << ": " << compared << " compared, "
                  << skipped << " skipped (inexact in quad)");
      CHECK(bad == 0);
      // At least 3.5 of the 4 operations per draw (the rest inexact in quad): 700'000 in Release.
      REQUIRE(compared > static_cast<long long>(7 * attndev::test::scaled_count(200'000) / 2));
    }
  }
}

TEST_CASE("fma_in(fp32) equals std::fmaf on float operands", "[arith]") {
  std::mt19937_64 rng(nt::test_seed("fma fp32", 0x5eed0005));
  int bad = 0;
  const int n = 1'000'000;
  for (int i = 0; i < n; ++i) {
    const float a = static_cast<float>(nt::log_uniform_double(rng, -70, 60));
    const float b = static_cast<float>(nt::log_uniform_double(rng, -70, 60));
    const float c = static_cast<float>(nt::log_uniform_double(rng, -140, 120));
    if (!nt::same_value(fma_in(Format::fp32, a, b, c), std::fmaf(a, b, c))) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("sticky corners: ties decided by what the double dropped", "[arith]") {
  // 1 + 2^-8 is a bf16 tie; 2^-60 is lost by the double sum, kept as TwoSum's error: must go up.
  const double tie = 1.0 + std::ldexp(1.0, -8);
  CHECK(add_in(Format::bf16, tie, std::ldexp(1.0, -60)) == 1.0 + std::ldexp(1.0, -7));
  CHECK(add_in(Format::bf16, tie, -std::ldexp(1.0, -60)) == 1.0);
  CHECK(add_in(Format::bf16, tie, 0.0) == 1.0);
  // fp16 overflow midpoint 65520 minus a hair is 65504, not inf.
  CHECK(add_in(Format::fp16, 65520.0, -std::ldexp(1.0, -30)) == 65504.0);
  CHECK(add_in(Format::fp16, 65520.0, std::ldexp(1.0, -30)) == INFINITY);
  // fma whose t + pl would round onto ulp(s): exact value just above a fp32 midpoint.
  const double mid32 = 1.0 + std::ldexp(1.0, -24);
  CHECK(fma_in(Format::fp32, 1.0 + std::ldexp(1.0, -30), 1.0 + std::ldexp(1.0, -40),
               mid32 - 1.0 - std::ldexp(1.0, -30) - std::ldexp(1.0, -40)) ==
        1.0 + std::ldexp(1.0, -23));
  CHECK(std::isnan(fma_in(Format::bf16, INFINITY, 0.0, 1.0)));
  CHECK(fma_in(Format::fp16, 1e200, 1e200, 0.0) == INFINITY);
  CHECK(div_in(Format::bf16, 1.0, 3.0) == round_to(Format::bf16, 1.0 / 3.0));
}

TEST_CASE("mac_in: fused and unfused differ on a constructed case", "[arith]") {
  // a*b = 1 + 2^-10 + 2^-22 exactly. Unfused, the product rounds to fp16's 1 + 2^-10 and the
  // accumulation cancels to 0; fused, the 2^-22 survives (an fp16 subnormal-range value).
  const double a = 1.0 + std::ldexp(1.0, -11), b = 1.0 + std::ldexp(1.0, -11);
  const double acc = -(1.0 + std::ldexp(1.0, -10));
  const double fused = mac_in(Format::fp16, /*fused=*/true, acc, a, b);
  const double unfused = mac_in(Format::fp16, /*fused=*/false, acc, a, b);
  CHECK(fused == std::ldexp(1.0, -22));
  CHECK(unfused == 0.0);
  CHECK(fused != unfused);
}
