// encode/decode/classify: exhaustive over every fp16, bf16, e4m3 and e5m2 pattern (and a strided
// sweep of fp32/tf32): decode agrees with a significand*2^exponent reading of the fields, decode ->
// encode is the identity (NaN stays NaN), decoded finite values strictly increase along the
// patterns, and the class counts are those the layout implies.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "numerics/encode.hpp"
#include "numerics/oracle.hpp"

namespace nt = attndev::numerics::testing;
using namespace attndev::numerics;

namespace {

struct Fields {
  int storage_bits, exponent_bits, fraction_bits;
};

Fields fields_of(Format f) {
  const FormatTraits t = traits(f);
  return {t.storage_bits, t.exponent_bits, t.fraction_bits};
}

// The value of a pattern by the textbook formula, with the special patterns spelled out per
// format (written independently of encode.hpp's classify/decode).
double textbook_value(Format f, std::uint32_t b) {
  const Fields l = fields_of(f);
  const int bias = (1 << (l.exponent_bits - 1)) - 1;
  const std::uint32_t e_max = (1u << l.exponent_bits) - 1;
  const std::uint32_t frac_max = (1u << l.fraction_bits) - 1;
  const bool negative = (b >> (l.storage_bits - 1)) & 1u;
  const std::uint32_t e = (b >> l.fraction_bits) & e_max;
  const std::uint32_t m = b & frac_max;
  double v;
  if (f == Format::fp8_e4m3 && e == e_max && m == frac_max) return std::nan("");
  if (f != Format::fp8_e4m3 && e == e_max) {
    if (m != 0) return std::nan("");
    v = INFINITY;
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - l.fraction_bits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1u << l.fraction_bits)),
                   static_cast<int>(e) - bias - l.fraction_bits);
  }
  return negative ? -v : v;
}

}  // namespace

TEST_CASE("every 8- and 16-bit pattern: decode, classify, round trip, order", "[encode]") {
  for (Format f : {Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2}) {
    const FormatTraits t = traits(f);
    const Fields l = fields_of(f);
    const std::uint32_t count = 1u << l.storage_bits;
    const std::uint32_t sign_bit = count >> 1;
    int n_class[5] = {0, 0, 0, 0, 0};
    int bad = 0;
    double previous = -1.0;
    for (std::uint32_t b = 0; b < count; ++b) {
      const double v = decode(f, b);
      const double want = textbook_value(f, b);
      const FpClass c = classify(f, b);
      ++n_class[static_cast<int>(c)];
      bool ok = nt::same_value(v, want);
      switch (c) {
        case FpClass::nan:
          ok = ok && std::isnan(v);
          break;
        case FpClass::inf:
          ok = ok && std::isinf(v);
          break;
        case FpClass::zero:
          ok = ok && v == 0.0;
          break;
        case FpClass::subnormal:
          ok = ok && v != 0.0 && std::fabs(v) < t.min_normal();
          break;
        case FpClass::normal:
          ok = ok && std::fabs(v) >= t.min_normal() && std::fabs(v) <= t.max_finite;
          break;
      }
      // Round trip: exact for every non-NaN pattern; a NaN pattern re-encodes as some NaN.
      const std::uint64_t back = encode(f, v);
      ok = ok && (c == FpClass::nan ? classify(f, back) == FpClass::nan : back == b);
      // Strict order of the positive finite values along the patterns (negatives mirror them).
      if (b < sign_bit && std::isfinite(v)) {
        ok = ok && v > previous;
        previous = v;
        ok = ok && nt::same_value(decode(f, b | sign_bit), -v);
      }
      if (!ok && ++bad <= 5) {
        UNSCOPED_INFO(t.name << " pattern 0x" << std::hex << b << std::dec << " decode "
                             << nt::hex(v) << " textbook " << nt::hex(want) << " class "
                             << fp_class_name(c) << " re-encoded 0x" << std::hex << back);
      }
    }
    INFO(t.name << ": " << count << " patterns");
    CHECK(bad == 0);
    const int frac_patterns = 1 << l.fraction_bits;
    CHECK(n_class[static_cast<int>(FpClass::zero)] == 2);
    CHECK(n_class[static_cast<int>(FpClass::subnormal)] == 2 * (frac_patterns - 1));
    CHECK(n_class[static_cast<int>(FpClass::inf)] == (t.has_inf ? 2 : 0));
    CHECK(n_class[static_cast<int>(FpClass::nan)] == (t.has_inf ? 2 * (frac_patterns - 1) : 2));
    CHECK(previous == t.max_finite);  // the largest positive finite pattern is max_finite
  }
}

TEST_CASE("fp32 and tf32 patterns, strided over all 2^32", "[encode]") {
  int bad = 0;
  long long compared = 0;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4093) {
    const std::uint32_t u = static_cast<std::uint32_t>(b);
    const float x = float_from_bits(u);
    const double v = decode(Format::fp32, u);
    bool ok = nt::same_value(v, static_cast<double>(x));
    if (!std::isnan(x)) ok = ok && encode(Format::fp32, v) == u;
    // tf32 reads the fp32 layout and ignores the 13 low fraction bits.
    const std::uint32_t t = u & 0xFFFFE000u;
    const double vt = decode(Format::tf32, u);
    ok = ok && nt::same_value(vt, static_cast<double>(float_from_bits(t)));
    if (!std::isnan(vt)) ok = ok && encode(Format::tf32, vt) == t;
    if (std::isnan(vt)) ok = ok && classify(Format::tf32, encode(Format::tf32, vt)) == FpClass::nan;
    ++compared;
    if (!ok && ++bad <= 5) UNSCOPED_INFO("pattern 0x" << std::hex << u);
  }
  CHECK(bad == 0);
  REQUIRE(compared > 1'000'000);
}

TEST_CASE("typed helpers and named patterns", "[encode]") {
  CHECK(encode_fp16(1.0) == 0x3C00);
  CHECK(encode_fp16(65504.0) == 0x7BFF);
  CHECK(encode_fp16(65520.0) == 0x7C00);
  CHECK(encode_fp16(-0.0) == 0x8000);
  CHECK(encode_fp16(std::ldexp(1.0, -24)) == 0x0001);
  CHECK(encode_bf16(1.0) == 0x3F80);
  CHECK(encode_bf16(-2.0) == 0xC000);
  CHECK(encode_e4m3(1.0) == 0x38);
  CHECK(encode_e4m3(448.0) == 0x7E);
  CHECK(encode_e4m3(500.0) == 0x7F);  // NaN: no inf in e4m3
  CHECK(encode_e4m3(500.0, Overflow::saturate) == 0x7E);
  CHECK(encode_e4m3(-500.0, Overflow::saturate) == 0xFE);
  CHECK(encode_e5m2(1.0) == 0x3C);
  CHECK(encode_e5m2(1e6) == 0x7C);
  CHECK(encode_e5m2(1e6, Overflow::saturate) == 0x7B);
  CHECK(decode_e4m3(0x7E) == 448.0);
  CHECK(decode_e4m3(0x01) == std::ldexp(1.0, -9));
  CHECK(std::isnan(decode_e4m3(0xFF)));
  CHECK(decode_e5m2(0x7B) == 57344.0);
  CHECK(decode_fp16(0x0400) == std::ldexp(1.0, -14));
  CHECK(decode_bf16(0x0001) == std::ldexp(1.0, -133));
  CHECK(classify(Format::fp16, 0x7E00) == FpClass::nan);
  CHECK(classify(Format::fp8_e4m3, 0x78) == FpClass::normal);  // 256: e4m3 has no inf
  CHECK(is_nan_encoding(Format::fp8_e5m2, 0x7D));
  CHECK(encode(Format::fp64, -1.5) == bits_of(-1.5));
}
