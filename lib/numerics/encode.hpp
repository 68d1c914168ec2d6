// Bit patterns of the formats: encode (round, then pack) and decode (unpack to the exact double).
//
// Layouts: sign | exponent (bias 1 - min_exponent) | fraction, in the low storage_bits of the
// returned integer. tf32 lives in a 32-bit container with the fp32 layout and its 13 low fraction
// bits zero (what tensor cores read; decode ignores those bits, as the hardware does). fp8-e4m3 is
// OCP E4M3FN: exponent 1111 is a normal binade except S.1111.111, the only NaN; no inf.
//
// NaN: encode keeps the sign and the top fraction bits of the payload with the quiet bit set
// (what float -> half conversion does on x86 and what float -> double -> float does); e4m3 has a
// single NaN per sign. decode maps a NaN pattern to a quiet double NaN carrying the same payload,
// so decode -> encode keeps a NaN a NaN (a signalling pattern comes back quiet).
//
// The quantization formats (format.hpp): fp6 and fp4 have the textbook layout with no special
// pattern (exponent all ones is a normal binade); a NaN, which they cannot hold, encodes as the
// largest magnitude with its sign (what a saturating cast produces for an overflow; round_to keeps
// NaN a NaN, so a quantizer sees it before anything is encoded). e8m0 is the biased exponent
// alone, 0xFF = NaN. ue4m3 is e4m3's low 7 bits: the sign bit is written 0 and ignored when read.
// int8 and int4 are two's complement; the pattern -2^(bits-1) (0x80, 0x8) lies outside the
// symmetric range: decode gives its integer value, rounding never produces it.
#pragma once

#include <cstdint>

#include "format.hpp"
#include "host_device.hpp"
#include "round.hpp"

namespace attndev::numerics {

enum class FpClass : std::uint8_t { nan, inf, zero, subnormal, normal };

namespace detail {

struct Layout {
  int fraction_bits;  // in the encoding (tf32: 23, the fp32 container)
  int exponent_bits;
  int bias;
  int storage_bits;
  bool has_inf;
};

ATTNDEV_HD constexpr Layout layout(Format f) {
  const FormatTraits t = traits(f);
  if (f == Format::tf32) return {23, 8, 127, 32, true};
  return {t.fraction_bits, t.exponent_bits, 1 - t.min_exponent, t.storage_bits, t.has_inf};
}

ATTNDEV_HD constexpr std::uint64_t low_mask(int bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1u;
}

}  // namespace detail

// Bit pattern of an already representable value (or NaN, +-inf) of f. A value that is not
// representable is rounded first, so encode_exact(f, round_to(f, x)) == encode(f, x).
namespace detail {

// The encodings that are not sign | exponent | fraction with e4m3's or IEEE's special patterns;
// `handled` is false for every other format.
ATTNDEV_HD inline std::uint64_t encode_special(Format f, double r, bool& handled) {
  const FormatTraits t = traits(f);
  handled = true;
  if (t.kind == FormatKind::integer) {
    const std::uint64_t mask = low_mask(t.storage_bits);
    if (r != r) return (std::uint64_t{1} << (t.storage_bits - 1)) - 1u;  // never produced
    const long long v = static_cast<long long>(r);
    return static_cast<std::uint64_t>(v) & mask;
  }
  if (t.kind == FormatKind::scale) {
    if (!(r > 0.0) || r == INFINITY) return 0xFF;
    const int exponent = static_cast<int>(bits_of(r) >> 52) - 1023;
    return static_cast<std::uint64_t>(exponent + 127);
  }
  if (!t.has_nan && (r != r || fabs(r) == INFINITY)) {
    // fp6 / fp4 cannot hold NaN or inf: the largest magnitude, with the sign (see the top).
    const std::uint64_t sign = (bits_of(r) >> 63) << (t.storage_bits - 1);
    return sign | low_mask(t.storage_bits - 1);
  }
  handled = false;
  return 0;
}

// sign | exponent | fraction with IEEE's or e4m3's special patterns.
ATTNDEV_HD inline std::uint64_t encode_float_layout(Format f, double r) {
  const detail::Layout l = detail::layout(f);
  const std::uint64_t u = bits_of(r);
  const std::uint64_t sign = (u >> 63) << (l.storage_bits - 1);
  const std::uint64_t exp_all_ones = detail::low_mask(l.exponent_bits) << l.fraction_bits;
  const std::uint64_t frac_mask = detail::low_mask(l.fraction_bits);
  const std::uint64_t abs_u = u & ~(std::uint64_t{1} << 63);
  if (abs_u > 0x7FF0000000000000u) {  // NaN
    if (!l.has_inf) return sign | exp_all_ones | frac_mask;
    const std::uint64_t payload = (abs_u >> (52 - l.fraction_bits)) & frac_mask;
    return sign | exp_all_ones | payload | (std::uint64_t{1} << (l.fraction_bits - 1));
  }
  if (abs_u == 0x7FF0000000000000u) {  // inf; e4m3 has none, so it can only be NaN there
    return l.has_inf ? sign | exp_all_ones : sign | exp_all_ones | frac_mask;
  }
  if (abs_u == 0) return sign;
  const int exponent = static_cast<int>(abs_u >> 52) - 1023;
  const FormatTraits t = traits(f);
  if (exponent < t.min_exponent) {
    // Subnormal of f: the fraction field is the value in units of the subnormal quantum, an
    // integer below 2^fraction_bits; the double product is exact.
    const double units = fabs(r) * detail::pow2_normal(-(t.min_exponent - t.fraction_bits));
    return sign | (static_cast<std::uint64_t>(units) << (l.fraction_bits - t.fraction_bits));
  }
  const std::uint64_t biased = static_cast<std::uint64_t>(exponent + l.bias);
  const std::uint64_t frac = (abs_u >> (52 - l.fraction_bits)) & frac_mask;
  return sign | (biased << l.fraction_bits) | frac;
}

}  // namespace detail

ATTNDEV_HD inline std::uint64_t encode_exact(Format f, double r) {
  if (f == Format::fp64) return bits_of(r);
  bool handled = false;
  const std::uint64_t special = detail::encode_special(f, r, handled);
  if (handled) return special;
  // ue4m3 is e4m3 with the sign bit written 0 (a negative value is not representable).
  if (f == Format::ue4m3) return detail::encode_float_layout(Format::fp8_e4m3, r) & 0x7Fu;
  return detail::encode_float_layout(f, r);
}

// Rounds x to f (RNE, the given overflow rule) and returns the bit pattern.
ATTNDEV_HD inline std::uint64_t encode(Format f, double x, Overflow overflow) {
  return encode_exact(f, round_to(f, x, overflow));
}
ATTNDEV_HD inline std::uint64_t encode(Format f, double x) {
  return encode(f, x, default_overflow(f));
}

// Classification of an encoding of f (bits above storage_bits are ignored).
ATTNDEV_HD inline FpClass classify(Format f, std::uint64_t bits) {
  const FormatTraits t = traits(f);
  if (t.kind == FormatKind::integer)
    return (bits & detail::low_mask(t.storage_bits)) == 0 ? FpClass::zero : FpClass::normal;
  if (t.kind == FormatKind::scale) return (bits & 0xFFu) == 0xFFu ? FpClass::nan : FpClass::normal;
  if (f == Format::ue4m3) {
    f = Format::fp8_e4m3;
    bits &= 0x7Fu;
  }
  const detail::Layout l = detail::layout(f);
  bits &= detail::low_mask(l.storage_bits);
  const std::uint64_t e_max = detail::low_mask(l.exponent_bits);
  const std::uint64_t e = (bits >> l.fraction_bits) & e_max;
  std::uint64_t frac = bits & detail::low_mask(l.fraction_bits);
  if (f == Format::tf32) frac &= ~std::uint64_t{0x1FFF};
  if (e == e_max && t.has_nan) {
    if (!l.has_inf)
      return frac == detail::low_mask(l.fraction_bits) ? FpClass::nan : FpClass::normal;
    return frac == 0 ? FpClass::inf : FpClass::nan;
  }
  if (e == 0) return frac == 0 ? FpClass::zero : FpClass::subnormal;
  return FpClass::normal;
}

// The exact value of an encoding of f (a quiet NaN with the same sign and payload for NaNs).
ATTNDEV_HD inline double decode(Format f, std::uint64_t bits) {
  if (f == Format::fp64) return double_from_bits(bits);
  const FormatTraits t = traits(f);
  if (t.kind == FormatKind::integer) {
    const std::uint64_t u = bits & detail::low_mask(t.storage_bits);
    const std::uint64_t sign_bit = std::uint64_t{1} << (t.storage_bits - 1);
    return (u & sign_bit) ? -static_cast<double>((sign_bit << 1) - u) : static_cast<double>(u);
  }
  if (t.kind == FormatKind::scale) {
    const int byte = static_cast<int>(bits & 0xFFu);
    return byte == 0xFF ? NAN : detail::pow2_normal(byte - 127);
  }
  if (f == Format::ue4m3) {
    f = Format::fp8_e4m3;
    bits &= 0x7Fu;
  }
  const detail::Layout l = detail::layout(f);
  bits &= detail::low_mask(l.storage_bits);
  if (f == Format::tf32) bits &= ~std::uint64_t{0x1FFF};
  const std::uint64_t sign = (bits >> (l.storage_bits - 1)) << 63;
  const std::uint64_t frac = bits & detail::low_mask(l.fraction_bits);
  const std::uint64_t e = (bits >> l.fraction_bits) & detail::low_mask(l.exponent_bits);
  switch (classify(f, bits)) {
    case FpClass::nan:
      return double_from_bits(sign | 0x7FF8000000000000u | (frac << (52 - l.fraction_bits)));
    case FpClass::inf:
      return double_from_bits(sign | 0x7FF0000000000000u);
    case FpClass::zero:
      return double_from_bits(sign);
    case FpClass::subnormal: {
      const double v =
          static_cast<double>(frac) * detail::pow2_normal(1 - l.bias - l.fraction_bits);
      return double_from_bits(sign | bits_of(v));
    }
    case FpClass::normal:
      break;
  }
  const std::uint64_t biased = e - static_cast<std::uint64_t>(l.bias) + 1023u;
  return double_from_bits(sign | (biased << 52) | (frac << (52 - l.fraction_bits)));
}

ATTNDEV_HD inline bool is_nan_encoding(Format f, std::uint64_t bits) {
  return classify(f, bits) == FpClass::nan;
}

// Typed helpers for the storage formats kernels exchange.
ATTNDEV_HD inline std::uint16_t encode_fp16(double x) {
  return static_cast<std::uint16_t>(encode(Format::fp16, x));
}
ATTNDEV_HD inline std::uint16_t encode_bf16(double x) {
  return static_cast<std::uint16_t>(encode(Format::bf16, x));
}
ATTNDEV_HD inline std::uint8_t encode_e4m3(double x, Overflow overflow = Overflow::to_nan) {
  return static_cast<std::uint8_t>(encode(Format::fp8_e4m3, x, overflow));
}
ATTNDEV_HD inline std::uint8_t encode_e5m2(double x, Overflow overflow = Overflow::to_inf) {
  return static_cast<std::uint8_t>(encode(Format::fp8_e5m2, x, overflow));
}
ATTNDEV_HD inline double decode_fp16(std::uint16_t bits) {
  return decode(Format::fp16, bits);
}
ATTNDEV_HD inline double decode_bf16(std::uint16_t bits) {
  return decode(Format::bf16, bits);
}
ATTNDEV_HD inline double decode_e4m3(std::uint8_t bits) {
  return decode(Format::fp8_e4m3, bits);
}
ATTNDEV_HD inline double decode_e5m2(std::uint8_t bits) {
  return decode(Format::fp8_e5m2, bits);
}

inline const char* fp_class_name(FpClass c) {
  constexpr const char* kNames[] = {"nan", "inf", "zero", "subnormal", "normal"};
  return kNames[static_cast<int>(c)];
}

}  // namespace attndev::numerics
