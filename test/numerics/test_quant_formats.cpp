// The quantization formats (fp6 e2m3 / e3m2, fp4 e2m1, e8m0, ue4m3, int8, int4): every pattern
// against a textbook reading written here from the OCP MX v1.0 tables (decode, classify, round
// trip, order), and round_to against the independent oracle (oracle.hpp) on every halfway point
// of each format, both sides of it, and random doubles.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "numerics/encode.hpp"
#include "numerics/oracle.hpp"
#include "numerics/round.hpp"
#include "test_scale.hpp"

namespace nt = attndev::numerics::testing;
using namespace attndev::numerics;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The value of pattern b, from the field formulas (sign, biased exponent, fraction), spelled out
// per format rather than read from FormatTraits.
double textbook(Format f, std::uint32_t b) {
  auto minifloat = [](std::uint32_t bits, int e_bits, int m_bits, int bias, bool e4m3_nan) {
    const bool negative = (bits >> (e_bits + m_bits)) & 1u;
    const std::uint32_t e = (bits >> m_bits) & ((1u << e_bits) - 1);
    const std::uint32_t m = bits & ((1u << m_bits) - 1);
    if (e4m3_nan && e == 15 && m == 7) return kNaN;
    const double v = e == 0 ? std::ldexp(m, 1 - bias - m_bits)
                            : std::ldexp(m + (1u << m_bits), static_cast<int>(e) - bias - m_bits);
    return negative ? -v : v;
  };
  switch (f) {
    case Format::fp6_e2m3:
      return minifloat(b, 2, 3, 1, false);
    case Format::fp6_e3m2:
      return minifloat(b, 3, 2, 3, false);
    case Format::fp4_e2m1:
      return minifloat(b, 2, 1, 1, false);
    case Format::ue4m3:
      return minifloat(b & 0x7Fu, 4, 3, 7, true);  // the sign bit is ignored
    case Format::e8m0:
      return b == 0xFF ? kNaN : std::ldexp(1.0, static_cast<int>(b) - 127);
    case Format::int8:
      return static_cast<double>(static_cast<std::int8_t>(static_cast<std::uint8_t>(b)));
    case Format::int4:
      return b >= 8 ? static_cast<double>(static_cast<int>(b) - 16) : static_cast<double>(b);
    default:
      return kNaN;
  }
}

struct Expect {
  Format format;
  int patterns;
  double max;
  int nan_patterns;
};

constexpr Expect kExpect[] = {
    {Format::fp6_e2m3, 64, 7.5, 0}, {Format::fp6_e3m2, 64, 28.0, 0}, {Format::fp4_e2m1, 16, 6.0, 0},
    {Format::ue4m3, 256, 448.0, 2}, {Format::e8m0, 256, 0x1p127, 1}, {Format::int8, 256, 127.0, 0},
    {Format::int4, 16, 7.0, 0},
};

// The patterns that rounding never produces: ue4m3's sign bit set, the integers' -2^(bits-1).
bool canonical(Format f, std::uint32_t b) {
  if (f == Format::ue4m3) return b < 0x80;
  if (f == Format::int8) return b != 0x80;
  if (f == Format::int4) return b != 0x8;
  return true;
}

}  // namespace

TEST_CASE("quantization formats: every pattern decodes, classifies, round-trips and orders",
          "[encode][quant]") {
  for (const Expect& x : kExpect) {
    const FormatTraits t = traits(x.format);
    INFO(t.name);
    CHECK(1 << t.storage_bits == x.patterns);
    CHECK(t.max_finite == x.max);
    int bad = 0, nans = 0;
    std::vector<double> finite;
    for (std::uint32_t b = 0; b < static_cast<std::uint32_t>(x.patterns); ++b) {
      const double v = decode(x.format, b);
      const double want = textbook(x.format, b);
      bool ok = nt::same_value(v, want);
      ok = ok && (classify(x.format, b) == FpClass::nan) == std::isnan(v);
      if (std::isnan(v)) {
        ++nans;
      } else if (canonical(x.format, b)) {
        finite.push_back(v);
        ok = ok && std::fabs(v) <= t.max_finite;
        // The value is representable, and encodes back to its own pattern (-0 of a signed
        // float format to its own pattern too).
        ok = ok && nt::same_value(round_to(x.format, v), v);
        ok = ok && encode(x.format, v) == b;
      }
      if (!ok && ++bad <= 5)
        UNSCOPED_INFO("pattern 0x" << std::hex << b << std::dec << " decode " << nt::hex(v)
                                   << " textbook " << nt::hex(want));
    }
    CHECK(bad == 0);
    CHECK(nans == x.nan_patterns);
    // Distinct values: no two canonical patterns decode to the same number except +-0.
    std::sort(finite.begin(), finite.end());
    int duplicates = 0;
    for (std::size_t i = 1; i < finite.size(); ++i) duplicates += finite[i] == finite[i - 1];
    const bool has_negative_zero = t.kind == FormatKind::floating && t.has_sign;
    CHECK(duplicates == (has_negative_zero ? 1 : 0));
    CHECK(finite.back() == t.max_finite);
  }
}

TEST_CASE("quantization formats: the values OCP MX v1.0 lists", "[round][quant]") {
  // fp4 e2m1's eight magnitudes (OCP MX v1.0, Table 5 of Sec. 5.3.3).
  std::vector<double> fp4;
  for (std::uint32_t b = 0; b < 8; ++b) fp4.push_back(decode(Format::fp4_e2m1, b));
  CHECK(fp4 == std::vector<double>{0, 0.5, 1, 1.5, 2, 3, 4, 6});
  CHECK(traits(Format::fp6_e2m3).min_subnormal() == 0.125);
  CHECK(traits(Format::fp6_e3m2).min_subnormal() == 0.0625);
  CHECK(traits(Format::fp6_e3m2).min_normal() == 0.25);
  // Saturation whatever the rule: these formats hold neither inf nor NaN.
  for (Overflow o : {Overflow::to_inf, Overflow::to_nan, Overflow::saturate}) {
    CHECK(round_to(Format::fp4_e2m1, 7.0, o) == 6.0);
    CHECK(round_to(Format::fp6_e2m3, -1e9, o) == -7.5);
    CHECK(round_to(Format::int8, 1e300, o) == 127.0);
    CHECK(round_to(Format::int4, -INFINITY, o) == -7.0);
  }
  CHECK(round_to(Format::fp4_e2m1, 5.0) == 4.0);  // the tie between 4 and 6 goes to 4 (even)
  CHECK(round_to(Format::fp4_e2m1, 5.0000001) == 6.0);
  CHECK(round_to(Format::int8, 2.5) == 2.0);  // cvt.rni: ties to even
  CHECK(round_to(Format::int8, -3.5) == -4.0);
  CHECK(round_to(Format::int8, 126.5) == 126.0);
  CHECK(round_to(Format::int8, 127.5) == 127.0);  // 128 is beyond the symmetric range
  CHECK(!std::signbit(round_to(Format::int8, -0.25)));
  CHECK(std::isnan(round_to(Format::int8, kNaN)));
  // e8m0: powers of two only, no zero, no sign.
  // The tie 1.5 * 2^e goes to the even encoding: 3 -> 2 (128, not 4's 129), 6 -> 8 (130).
  CHECK(round_to(Format::e8m0, 3.0) == 2.0);
  CHECK(round_to(Format::e8m0, 6.0) == 8.0);
  CHECK(round_to(Format::e8m0, 3.0000001) == 4.0);
  CHECK(round_to(Format::e8m0, 0.0) == 0x1p-127);
  CHECK(std::isnan(round_to(Format::e8m0, -1.0)));
  CHECK(std::isnan(round_to(Format::e8m0, 0x1p128)));
  CHECK(round_to(Format::e8m0, 0x1p128, Overflow::saturate) == 0x1p127);
  CHECK(encode(Format::e8m0, 1.0) == 127);
  CHECK(encode(Format::ue4m3, 448.0) == 0x7E);
  CHECK(std::isnan(round_to(Format::ue4m3, -1.0)));
  CHECK(round_to(Format::ue4m3, -0.0) == 0.0);
  CHECK(encode(Format::int8, -1.0) == 0xFF);
  CHECK(encode(Format::int4, -7.0) == 0x9);
}

TEST_CASE("round_to matches the oracle on every halfway point of the quantization formats",
          "[round][quant]") {
  long long compared = 0;
  int bad = 0;
  std::mt19937_64 rng(nt::test_seed("quant formats", 0x5eed0036));
  for (const Expect& x : kExpect) {
    const Format f = x.format;
    std::vector<double> values;
    for (std::uint32_t b = 0; b < static_cast<std::uint32_t>(x.patterns); ++b) {
      const double v = decode(f, b);
      if (!std::isnan(v) && canonical(f, b)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    std::vector<double> probes = {0.0, -0.0, INFINITY, -INFINITY, kNaN, 1e300, -1e300, 1e-300};
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      const double mid = values[i] + (values[i + 1] - values[i]) / 2;
      for (double p :
           {values[i], mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)})
        probes.push_back(p);
    }
    const double top = values.back();
    for (double p : {top, top * 1.01, top * 2, top + (top - values[values.size() - 2]) / 2})
      probes.push_back(p);
    for (std::size_t i = 0; i < attndev::test::scaled_count(20000); ++i)
      probes.push_back(nt::log_uniform_double(rng, -140, 140));
    for (double p : probes) {
      for (Overflow o : {Overflow::to_inf, Overflow::to_nan, Overflow::saturate}) {
        for (double s : {p, -p}) {
          const double got = round_to(f, s, o);
          const double want = nt::oracle_round(f, s, o);
          ++compared;
          if (!nt::same_value(got, want) && ++bad <= 5)
            UNSCOPED_INFO(traits(f).name << " x=" << nt::hex(s) << " overflow "
                                         << static_cast<int>(o) << " got " << nt::hex(got)
                                         << " want " << nt::hex(want));
        }
      }
    }
  }
  INFO("compared " << compared);
  CHECK(bad == 0);
  // Every halfway point and its neighbours (about 27,000 comparisons over the formats), plus the
  // random probes: 6 x 20,000 per format at full scale, scaled_count's share of them in smoke.
  CHECK(compared > (attndev::test::kSmokeScale ? 25000 : 100000));
}

TEST_CASE("quantization format names parse and are refused as nothing else", "[quant]") {
  for (Format f : kQuantFormats) {
    Format back = Format::fp64;
    CHECK(parse_format(traits(f).name, back));
    CHECK(back == f);
    CHECK_FALSE(is_stage_format(f));
  }
  for (Format f : kAllFormats) CHECK(is_stage_format(f));
  CHECK(std::size(kEveryFormat) == std::size(kAllFormats) + std::size(kQuantFormats));
  Format f = Format::fp64;
  CHECK(parse_format("e2m1", f));
  CHECK(f == Format::fp4_e2m1);
  CHECK(parse_format("ue8m0", f));
  CHECK(f == Format::e8m0);
}
