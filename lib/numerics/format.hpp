// Number formats the emulator rounds to, and their traits.
//
// Every format here is binary floating point with round-to-nearest-even. A format is described by
// its explicit fraction bits, its exponent range and what happens on overflow; the rounding code
// in round.hpp is generic over these traits, so adding a format means adding a row here.
#pragma once

#include <cstdint>
#include <string_view>

#include "host_device.hpp"

namespace attndev::numerics {

enum class Format : std::uint8_t { fp64, fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2 };

inline constexpr Format kAllFormats[] = {Format::fp64,    Format::fp32, Format::tf32,
                                         Format::fp16,    Format::bf16, Format::fp8_e4m3,
                                         Format::fp8_e5m2};

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
  int storage_bits;  // bits of the encoding (tf32 is stored in 32-bit containers)

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
  }
  return {"?", 0, 0, 0, 0, 0.0, false, 0};
}

inline const char* format_name(Format f) {
  return traits(f).name;
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
