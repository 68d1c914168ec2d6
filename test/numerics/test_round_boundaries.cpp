// Every tie and boundary of every format, enumerated: halfway points between all consecutive
// values (all of them for the 8/16-bit formats and tf32 in the Release build, binade edges for
// fp32), both sides of each halfway point, max finite / overflow thresholds under each overflow
// rule, subnormal boundaries, and double-rounding traps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "numerics/encode.hpp"
#include "numerics/oracle.hpp"
#include "numerics/round.hpp"
#include "test_scale.hpp"

namespace nt = attndev::numerics::testing;
using attndev::numerics::Format;
using attndev::numerics::Overflow;
using attndev::numerics::round_to;
using attndev::numerics::traits;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Positive finite values of f in increasing order, built from significand and exponent (not from
// bit patterns). For fp32 only the three smallest and largest significands of each binade; at
// the smoke scale (sanitizer and clang builds, test_scale.hpp) the same for every format wider
// than fp8: each binade's edges still take every exponent and shift of the rounding code, and
// the Release build runs every value.
std::vector<double> values_of(Format f) {
  const auto t = traits(f);
  const long long per_binade = 1LL << t.fraction_bits;
  const bool sparse = t.fraction_bits > (attndev::test::kSmokeScale ? 3 : 12);
  std::vector<double> v;
  auto add_range = [&](long long lo, long long hi, int scale) {
    for (long long m = lo; m < hi; ++m) {
      // Sparse: over the middle of the binade in one step (fp32's 2^23 significands per binade,
      // skipped one by one, were 16 s of the Release build's test time).
      if (sparse && m - lo == 3 && hi - m > 3) m = hi - 3;
      v.push_back(std::ldexp(static_cast<double>(m), scale));
    }
  };
  add_range(0, per_binade, t.min_exponent - t.fraction_bits);  // zero and subnormals
  for (int e = t.min_exponent; e <= t.max_exponent; ++e) {
    add_range(per_binade, 2 * per_binade, e - t.fraction_bits);
  }
  while (v.back() > t.max_finite) v.pop_back();  // e4m3: S.1111.111 is NaN, not 480
  return v;
}

double next_up(double x) {
  return std::nextafter(x, kInf);
}
double next_down(double x) {
  return std::nextafter(x, -kInf);
}

struct Counter {
  long long compared = 0;
  int bad = 0;
  void check(Format f, double x, Overflow o) {
    const double got = round_to(f, x, o);
    const double want = nt::oracle_round(f, x, o);
    ++compared;
    if (!nt::same_value(got, want) && ++bad <= 8) {
      UNSCOPED_INFO(traits(f).name << " overflow=" << static_cast<int>(o) << " x=" << nt::hex(x)
                                   << " got=" << nt::hex(got) << " want=" << nt::hex(want));
    }
  }
};

}  // namespace

TEST_CASE("every halfway point and its neighbours, every format", "[round][boundary]") {
  for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3,
                   Format::fp8_e5m2}) {
    const auto t = traits(f);
    const std::vector<double> v = values_of(f);
    Counter c;
    int exact_ties = 0;
    const std::uint64_t last_bit =
        attndev::numerics::encode(f, std::ldexp(1.0, t.min_exponent - t.fraction_bits));
    for (std::size_t i = 0; i + 1 < v.size(); ++i) {
      int e2 = 0;
      std::frexp(v[i], &e2);
      const int binade = v[i] == 0.0 ? t.min_exponent : std::max(e2 - 1, t.min_exponent);
      if (v[i + 1] - v[i] != std::ldexp(1.0, binade - t.fraction_bits)) continue;  // fp32 gaps
      const double mid = v[i] + (v[i + 1] - v[i]) / 2;                             // exact
      for (double x : {v[i], mid, next_up(mid), next_down(mid), v[i + 1]}) {
        for (double s : {x, -x}) c.check(f, s, attndev::numerics::default_overflow(f));
      }
      // A tie goes to the neighbour whose encoding is even (its last fraction bit 0), read here
      // from the bit pattern, not from the oracle's significand arithmetic. That bit is the
      // encoding of the smallest subnormal (tf32 sits in an fp32 container: bit 13, not bit 0).
      const double r = round_to(f, mid);
      const double even = (attndev::numerics::encode(f, v[i]) & last_bit) == 0 ? v[i] : v[i + 1];
      ++exact_ties;
      if (!nt::same_value(r, even) && ++c.bad <= 8)
        UNSCOPED_INFO(traits(f).name << " tie " << nt::hex(mid) << " went to " << nt::hex(r)
                                     << ", even neighbour " << nt::hex(even));
    }
    // Above the largest finite value: its halfway point to the next (virtual) value and beyond.
    const double max = t.max_finite;
    const double top_half = std::ldexp(1.0, t.max_exponent - t.fraction_bits - 1);
    for (double x : {max, next_up(max), max + top_half, next_down(max + top_half),
                     next_up(max + top_half), 2 * max, 1e300, kInf}) {
      for (Overflow o : {Overflow::to_inf, Overflow::to_nan, Overflow::saturate}) {
        c.check(f, x, o);
        c.check(f, -x, o);
      }
    }
    INFO(t.name << ": " << v.size() << " values, " << exact_ties << " ties, " << c.compared
                << " comparisons");
    CHECK(c.bad == 0);
    REQUIRE(c.compared > 5 * static_cast<long long>(v.size()) - 10);
  }
}

TEST_CASE("subnormal boundaries", "[round][boundary]") {
  for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3,
                   Format::fp8_e5m2}) {
    const auto t = traits(f);
    const double ms = t.min_subnormal();
    const double mn = t.min_normal();
    INFO(t.name);
    CHECK(round_to(f, ms) == ms);
    CHECK(round_to(f, ms / 2) == 0.0);          // tie to even: 0
    CHECK(std::signbit(round_to(f, -ms / 2)));  // -0 keeps its sign
    CHECK(round_to(f, next_up(ms / 2)) == ms);
    CHECK(round_to(f, 1.5 * ms) == 2 * ms);  // tie between 1 (odd) and 2
    CHECK(round_to(f, 2.5 * ms) == 2 * ms);
    CHECK(round_to(f, mn - ms / 2) == mn);  // largest subnormal is odd
    CHECK(round_to(f, next_down(mn - ms / 2)) == mn - ms);
    CHECK(round_to(f, mn) == mn);
    CHECK(round_to(f, std::ldexp(1.0, -1074)) == 0.0);  // double's own subnormals
  }
}

TEST_CASE("named overflow thresholds", "[round][boundary]") {
  const Format e4m3 = Format::fp8_e4m3;
  CHECK(round_to(e4m3, 448.0, Overflow::to_nan) == 448.0);
  CHECK(round_to(e4m3, 464.0, Overflow::to_nan) == 448.0);  // tie: 448 is 1.110b (even)
  CHECK(std::isnan(round_to(e4m3, 465.0, Overflow::to_nan)));
  CHECK(std::isnan(round_to(e4m3, 480.0, Overflow::to_nan)));
  CHECK(std::isnan(round_to(e4m3, 465.0, Overflow::to_inf)));  // no inf in e4m3
  CHECK(round_to(e4m3, 464.0, Overflow::saturate) == 448.0);
  CHECK(round_to(e4m3, 465.0, Overflow::saturate) == 448.0);
  CHECK(round_to(e4m3, -480.0, Overflow::saturate) == -448.0);
  CHECK(round_to(e4m3, -kInf, Overflow::saturate) == -448.0);
  CHECK(std::isnan(round_to(e4m3, kInf)));

  const Format fp16 = Format::fp16;
  CHECK(round_to(fp16, 65519.99) == 65504.0);
  CHECK(round_to(fp16, 65520.0) == kInf);  // tie: 65504 is odd, the even neighbour is 2^16
  CHECK(round_to(fp16, -65520.0) == -kInf);
  CHECK(round_to(fp16, 65520.0, Overflow::saturate) == 65504.0);
  CHECK(round_to(fp16, kInf, Overflow::saturate) == 65504.0);  // as cvt.satfinite
  CHECK(round_to(Format::fp8_e5m2, 61440.0) == kInf);
  CHECK(round_to(Format::fp8_e5m2, next_down(61440.0)) == 57344.0);
  CHECK(round_to(Format::bf16, traits(Format::bf16).max_finite + 0x1p119) == kInf);  // tie, odd max
  CHECK(round_to(Format::bf16, next_down(traits(Format::bf16).max_finite + 0x1p119)) ==
        traits(Format::bf16).max_finite);
  CHECK(round_to(Format::fp32, 3.4028235677973366e38) == kInf);  // FLT_MAX + half ulp
}

TEST_CASE("double rounding traps: a double just above a tie must not round through float",
          "[round][boundary]") {
  // 1 + 2^-8 + 2^-30: float keeps 1 + 2^-8 (a bf16 tie, which goes to even: 1); the double is
  // above the tie and must go up.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  CHECK(round_to(Format::bf16, x) == 1.0 + std::ldexp(1.0, -7));
  CHECK(round_to(Format::bf16, static_cast<double>(static_cast<float>(x))) == 1.0);
  const double y = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(round_to(Format::fp16, y) == 1.0 + std::ldexp(1.0, -10));
  CHECK(round_to(Format::fp16, static_cast<double>(static_cast<float>(y))) == 1.0);
  // Below the tie, the same trap in the other direction (float rounds up onto the tie).
  const double z = 1.0 + 3 * std::ldexp(1.0, -8) - std::ldexp(1.0, -30);
  CHECK(round_to(Format::bf16, z) == 1.0 + std::ldexp(1.0, -7));
  CHECK(round_to(Format::bf16, static_cast<double>(static_cast<float>(z))) ==
        1.0 + std::ldexp(1.0, -6));
  // In every format: each value above a tie by one double ulp, against the oracle.
  Counter c;
  for (Format f : {Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2}) {
    const auto t = traits(f);
    for (int e = t.min_exponent; e <= t.max_exponent; ++e) {
      const double q = std::ldexp(1.0, e - t.fraction_bits);
      const double tie = std::ldexp(1.0, e) + q / 2;
      c.check(f, next_up(tie), attndev::numerics::default_overflow(f));
      c.check(f, tie * (1 + std::ldexp(1.0, -40)), attndev::numerics::default_overflow(f));
      CHECK(round_to(f, next_up(tie)) == std::ldexp(1.0, e) + q);
    }
  }
  CHECK(c.bad == 0);
  REQUIRE(c.compared > 100);
}
