// Number formats the emulator rounds to, and their traits.
//
// A format is described by its explicit fraction bits, its exponent range and what happens on
// overflow; the rounding code in round.hpp is generic over these traits, so adding a format means
// adding a row here. Three kinds (FormatKind):
//   floating  binary floating point with subnormals, round-to-nearest-even: the stage formats a
//             precision policy names (kAllFormats) and the narrow element formats of quantization
//             recipes (OCP MX v1.0's fp6 e2m3 / e3m2 and fp4 e2m1, which have neither inf nor NaN
//             and saturate). ue4m3 is e4m3 without its sign bit (NVFP4's block scale).
//   scale     e8m0: an unsigned power of two 2^(byte - 127), byte 0xFF = NaN; no zero, no
//             fraction (OCP MX's shared scale).
//   integer   int8, int4: symmetric two's-complement integers, [-127, 127] and [-7, 7],
//             saturating. They are modelled as a floating format whose whole range is subnormal:
//             quantum 2^(min_exponent - fraction_bits) = 1 and min_normal above max_finite, so
//             round.hpp's subnormal branch rounds to the nearest integer (ties to even, as
//             cvt.rni does) and overflow saturates.
// kAllFormats are the formats a policy stage may name; kQuantFormats exist for quantization
// (lib/numerics/quant.hpp) and are refused as stage formats by the policy parser.
#pragma once

#include <cstdint>
#include <string_view>

#include "host_device.hpp"

namespace attndev::numerics {

// New formats go at the end: the numeric values are stored in result files and bindings.
enum class Format : std::uint8_t {
  fp64,
  fp32,
  tf32,
  fp16,
  bf16,
  fp8_e4m3,
  fp8_e5m2,
  fp6_e2m3,
  fp6_e3m2,
  fp4_e2m1,
  e8m0,
  ue4m3,
  int8,
  int4,
};

// The stage formats: what a precision policy may name.
inline constexpr Format kAllFormats[] = {Format::fp64,    Format::fp32, Format::tf32,
                                         Format::fp16,    Format::bf16, Format::fp8_e4m3,
                                         Format::fp8_e5m2};
// Element and scale formats of quantization recipes only.
inline constexpr Format kQuantFormats[] = {Format::fp6_e2m3, Format::fp6_e3m2, Format::fp4_e2m1,
                                           Format::e8m0,     Format::ue4m3,    Format::int8,
                                           Format::int4};
// Every format (listings, parse_format).
inline constexpr Format kEveryFormat[] = {
    Format::fp64,     Format::fp32,     Format::tf32,     Format::fp16,     Format::bf16,
    Format::fp8_e4m3, Format::fp8_e5m2, Format::fp6_e2m3, Format::fp6_e3m2, Format::fp4_e2m1,
    Format::e8m0,     Format::ue4m3,    Format::int8,     Format::int4};

enum class FormatKind : std::uint8_t { floating, scale, integer };

// What a value beyond the largest finite number becomes.
enum class Overflow : std::uint8_t {
  to_inf,    // IEEE formats: +-inf
  to_nan,    // OCP fp8-e4m3 "FN" non-saturating conversion: NaN (the format has no inf)
  saturate,  // clamp to +-max finite (cvt ... .satfinite; FA-3's fp8 casts)
};

struct FormatTraits {
  const char* name;
  int fraction_bits;  // explicit mantissa bits (precision p = fraction_bits + 1)
  int exponent_bits;
  int min_exponent;  // exponent of the smallest normal number: 2^min_exponent
  int max_exponent;  // exponent of the largest finite binade
  double max_finite;
  bool has_inf;
  int storage_bits;      // bits of the encoding (tf32 is stored in 32-bit containers)
  bool has_nan = true;   // fp6, fp4 and the integers have no NaN: beyond max they saturate
  bool has_sign = true;  // e8m0 and ue4m3 hold positive values only
  FormatKind kind = FormatKind::floating;

  ATTNDEV_HD constexpr double min_normal() const { return pow2(min_exponent); }
  ATTNDEV_HD constexpr double min_subnormal() const { return pow2(min_exponent - fraction_bits); }
  // Unit roundoff u = 2^-(p): |round(x) - x| <= u |x| in the normal range.
  ATTNDEV_HD constexpr double unit_roundoff() const { return pow2(-(fraction_bits + 1)); }
  // Distance from 1 to the next larger number.
  ATTNDEV_HD constexpr double epsilon() const { return pow2(-fraction_bits); }

  ATTNDEV_HD static constexpr double pow2(int e) {
    double r = 1.0;
    for (; e > 0; --e) r *= 2.0;
    for (; e < 0; ++e) r *= 0.5;
    return r;
  }
};

ATTNDEV_HD constexpr FormatTraits traits(Format f) {
  switch (f) {
    case Format::fp64:
      return {"fp64", 52, 11, -1022, 1023, 1.7976931348623157e308, true, 64};
    case Format::fp32:
      return {"fp32", 23, 8, -126, 127, 3.4028234663852886e38, true, 32};
    case Format::tf32:  // fp32 range, 10 fraction bits: the tensor-core input format
      return {"tf32", 10, 8, -126, 127, 3.4011621342146535e38, true, 32};
    case Format::fp16:
      return {"fp16", 10, 5, -14, 15, 65504.0, true, 16};
    case Format::bf16:
      return {"bf16", 7, 8, -126, 127, 3.3895313892515355e38, true, 16};
    case Format::fp8_e4m3:  // OCP E4M3FN: S.1111.111 is NaN, so the top binade ends at 448
      return {"fp8-e4m3", 3, 4, -6, 8, 448.0, false, 8};
    case Format::fp8_e5m2:
      return {"fp8-e5m2", 2, 5, -14, 15, 57344.0, true, 8};
    // OCP Microscaling Formats (MX) v1.0 (2023), Sec. 5.3: no inf, no NaN, bias 1 / 3 / 1.
    case Format::fp6_e2m3:
      return {"fp6-e2m3", 3, 2, 0, 2, 7.5, false, 6, false};
    case Format::fp6_e3m2:
      return {"fp6-e3m2", 2, 3, -2, 4, 28.0, false, 6, false};
    case Format::fp4_e2m1:
      return {"fp4-e2m1", 1, 2, 0, 2, 6.0, false, 4, false};
    // OCP MX v1.0 Sec. 5.4: the shared scale, 2^(byte - 127), 0xFF = NaN.
    case Format::e8m0:
      return {"e8m0",
              0,
              8,
              -127,
              127,
              1.7014118346046923e38,
              false,
              8,
              true,
              /*has_sign=*/false,
              FormatKind::scale};
    // NVFP4's block scale: e4m3 with the sign bit 0 (the bit is ignored where it is read).
    case Format::ue4m3:
      return {"ue4m3", 3, 4, -6, 8, 448.0, false, 8, true, /*has_sign=*/false};
    case Format::int8:
      return {"int8", 7, 0, 7, 6, 127.0, false, 8, false, true, FormatKind::integer};
    case Format::int4:
      return {"int4", 3, 0, 3, 2, 7.0, false, 4, false, true, FormatKind::integer};
  }
  return {"?", 0, 0, 0, 0, 0.0, false, 0};
}

inline const char* format_name(Format f) {
  return traits(f).name;
}

// Whether a precision policy's stage may name f (kAllFormats).
ATTNDEV_HD constexpr bool is_stage_format(Format f) {
  return static_cast<int>(f) <= static_cast<int>(Format::fp8_e5m2);
}

// Accepts the canonical names and common spellings (float32, half, bfloat16, e4m3, ...).
// Returns false for an unknown name. Host only.
inline bool parse_format(std::string_view text, Format& out) {
  struct Alias {
    std::string_view name;
    Format format;
  };
  static constexpr Alias kAliases[] = {
      {"fp64", Format::fp64},         {"float64", Format::fp64},  {"double", Format::fp64},
      {"fp32", Format::fp32},         {"float32", Format::fp32},  {"float", Format::fp32},
      {"tf32", Format::tf32},         {"fp16", Format::fp16},     {"float16", Format::fp16},
      {"half", Format::fp16},         {"bf16", Format::bf16},     {"bfloat16", Format::bf16},
      {"fp8-e4m3", Format::fp8_e4m3}, {"e4m3", Format::fp8_e4m3}, {"fp8_e4m3", Format::fp8_e4m3},
      {"fp8-e5m2", Format::fp8_e5m2}, {"e5m2", Format::fp8_e5m2}, {"fp8_e5m2", Format::fp8_e5m2},
      {"fp6-e2m3", Format::fp6_e2m3}, {"e2m3", Format::fp6_e2m3}, {"fp6_e2m3", Format::fp6_e2m3},
      {"fp6-e3m2", Format::fp6_e3m2}, {"e3m2", Format::fp6_e3m2}, {"fp6_e3m2", Format::fp6_e3m2},
      {"fp4-e2m1", Format::fp4_e2m1}, {"e2m1", Format::fp4_e2m1}, {"fp4_e2m1", Format::fp4_e2m1},
      {"fp4", Format::fp4_e2m1},      {"e8m0", Format::e8m0},     {"ue8m0", Format::e8m0},
      {"ue4m3", Format::ue4m3},       {"int8", Format::int8},     {"int4", Format::int4},
  };
  for (const Alias& a : kAliases) {
    if (a.name == text) {
      out = a.format;
      return true;
    }
  }
  return false;
}

}  // namespace attndev::numerics
