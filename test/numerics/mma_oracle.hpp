// An independent oracle of the tensor cores' fused dot-add (numerics/mma.hpp), for the tests
// only. It shares no code with the model: operands are decoded from their bit patterns by the
// format's fields (a table of its own, not numerics::traits), every term is an exact big integer
// scaled to one common exponent (2^-kOffset: no double arithmetic touches a value), truncation
// clears the term's bits below 2^(E - F), and the final rounding reads the bits of the exact sum.
//
// The rule it implements is the published one (Khattak & Mikaitis, models/tools/
// Generic_BFMA_TC.m: GlobalAlignmentSum; MMA-Sim, arithmetic.py: nv_fused_dot_add), with
// Khattak & Mikaitis' choices where the two differ (zero terms dropped, E at least a per-profile
// limit, a nonzero sum keeps its sign when it truncates to zero). Deliberately wrong variants of
// the rule (Mode) let the tests show that they catch each kind of mistake.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "numerics/format.hpp"

namespace attndev::test::mma_oracle {

// Bit fields of a format. e4m3 is OCP E4M3FN (no inf; S.1111.111 the only NaN).
struct Spec {
  int fraction_bits;
  int exponent_bits;
  int bias;
  bool has_inf;
  int storage_bits;
};
inline constexpr Spec kFp16{10, 5, 15, true, 16};
inline constexpr Spec kBf16{7, 8, 127, true, 16};
inline constexpr Spec kFp32{23, 8, 127, true, 32};
inline constexpr Spec kE4m3{3, 4, 7, false, 8};
inline constexpr Spec kE5m2{2, 5, 15, true, 8};

// The spec of a numerics::Format (fp32 and tf32 registers: fp32's fields).
inline const Spec& spec_of(numerics::Format f) {
  switch (f) {
    case numerics::Format::fp16:
      return kFp16;
    case numerics::Format::bf16:
      return kBf16;
    case numerics::Format::fp8_e4m3:
      return kE4m3;
    case numerics::Format::fp8_e5m2:
      return kE5m2;
    default:
      return kFp32;
  }
}

enum class Class : std::uint8_t { finite, inf, nan };

// value = (-1)^neg * m * 2^x; e = the format exponent (1 - bias for subnormals and zero).
struct Decoded {
  Class cls = Class::finite;
  bool neg = false;
  std::uint64_t m = 0;
  int x = 0;
  int e = 0;
};

inline Decoded decode(const Spec& s, std::uint64_t bits) {
  Decoded d;
  const std::uint64_t frac = bits & ((std::uint64_t{1} << s.fraction_bits) - 1u);
  const int biased =
      static_cast<int>((bits >> s.fraction_bits) & ((std::uint64_t{1} << s.exponent_bits) - 1u));
  d.neg = ((bits >> (s.storage_bits - 1)) & 1u) != 0;
  const int all_ones = (1 << s.exponent_bits) - 1;
  if (s.has_inf && biased == all_ones) {
    d.cls = frac == 0 ? Class::inf : Class::nan;
    return d;
  }
  if (!s.has_inf && biased == all_ones && frac == (std::uint64_t{1} << s.fraction_bits) - 1u) {
    d.cls = Class::nan;
    return d;
  }
  d.e = biased == 0 ? 1 - s.bias : biased - s.bias;
  d.m = biased == 0 ? frac : frac | (std::uint64_t{1} << s.fraction_bits);
  d.x = d.e - s.fraction_bits;
  return d;
}

// ---- A fixed 768-bit magnitude with a sign; bit kOffset is 2^0. ----
inline constexpr int kLimbs = 12;
inline constexpr int kOffset = 400;

struct Big {
  bool neg = false;
  std::array<std::uint64_t, kLimbs> mag{};

  bool zero() const {
    for (std::uint64_t w : mag)
      if (w) return false;
    return true;
  }
  bool bit(int i) const { return i >= 0 && ((mag[i / 64] >> (i % 64)) & 1u); }
  bool any_below(int i) const {
    if (i <= 0) return false;
    for (int l = 0; l < i / 64; ++l)
      if (mag[l]) return true;
    return i % 64 != 0 && (mag[i / 64] & ((std::uint64_t{1} << (i % 64)) - 1u)) != 0;
  }
  void clear_below(int i) {
    if (i <= 0) return;
    if (i >= 64 * kLimbs) {
      mag.fill(0);
      return;
    }
    for (int l = 0; l < i / 64; ++l) mag[l] = 0;
    if (i % 64) mag[i / 64] &= ~((std::uint64_t{1} << (i % 64)) - 1u);
  }
  int top() const {  // -1 for zero
    for (int l = kLimbs - 1; l >= 0; --l)
      if (mag[l]) return 64 * l + 63 - __builtin_clzll(mag[l]);
    return -1;
  }
  // The bits [lo, lo + count), count <= 60.
  std::uint64_t bits(int lo, int count) const {
    std::uint64_t r = 0;
    for (int i = count - 1; i >= 0; --i) r = (r << 1) | (bit(lo + i) ? 1u : 0u);
    return r;
  }
};

// m 2^shift as a magnitude (m < 2^60, shift >= 0).
inline Big shifted(std::uint64_t m, int shift, bool neg) {
  Big b;
  b.neg = neg;
  const int l = shift / 64, o = shift % 64;
  b.mag[l] |= m << o;
  if (o && l + 1 < kLimbs) b.mag[l + 1] |= m >> (64 - o);
  return b;
}

inline int compare_mag(const Big& a, const Big& b) {
  for (int l = kLimbs - 1; l >= 0; --l)
    if (a.mag[l] != b.mag[l]) return a.mag[l] < b.mag[l] ? -1 : 1;
  return 0;
}

inline void add_pow2(Big& a, int i) {  // |a| += 2^i
  unsigned __int128 carry = static_cast<unsigned __int128>(1) << (i % 64);
  for (int l = i / 64; l < kLimbs && carry; ++l) {
    const unsigned __int128 s = static_cast<unsigned __int128>(a.mag[l]) + carry;
    a.mag[l] = static_cast<std::uint64_t>(s);
    carry = s >> 64;
  }
}

inline void accumulate(Big& acc, const Big& t) {  // acc += t, signed
  if (t.zero()) return;
  if (acc.zero()) {
    acc = t;
    return;
  }
  if (acc.neg == t.neg) {
    unsigned __int128 carry = 0;
    for (int l = 0; l < kLimbs; ++l) {
      const unsigned __int128 s = static_cast<unsigned __int128>(acc.mag[l]) + t.mag[l] + carry;
      acc.mag[l] = static_cast<std::uint64_t>(s);
      carry = s >> 64;
    }
    return;
  }
  const int c = compare_mag(acc, t);
  const Big& big = c >= 0 ? acc : t;
  const Big& small = c >= 0 ? t : acc;
  Big r;
  r.neg = big.neg;
  std::uint64_t borrow = 0;
  for (int l = 0; l < kLimbs; ++l) {
    const std::uint64_t x = big.mag[l], y = small.mag[l];
    const std::uint64_t d = x - y - borrow;
    borrow = (x < y || (x == y && borrow)) ? 1 : 0;
    r.mag[l] = d;
  }
  if (r.zero()) r.neg = false;
  acc = r;
}

// ---- The dot-add ----

// The correct rule, and wrong variants that the tests must catch.
enum class Mode : std::uint8_t {
  exact,          // the published rule
  round_nearest,  // each term rounded to nearest (even) at 2^(E - F) instead of truncated
  f_plus_one,     // one fraction bit more than the profile keeps
  f_minus_one,    // one fraction bit fewer
  c_last,         // C left out of the alignment: the products' fused sum, then + C, rounded
};

struct Params {
  int frac_bits;     // F
  bool e8m13;        // fp32 D rounded toward zero to 13 fraction bits
  int min_exp;       // E >= this (fp32 D)
  int min_exp_fp16;  // E >= this (fp16 D)
  bool tf32;         // operands are fp32 patterns truncated to tf32
};

enum class Out : std::uint8_t { fp32, fp16 };

struct Result {
  bool nan = false;
  bool neg = false;
  bool inf = false;
  std::uint64_t r = 0;  // |D| = r 2^q
  int q = 0;
};

inline Result round_sum(const Big& s, bool e8m13, Out out) {
  Result res;
  if (s.zero()) return res;  // an exact zero sum: +0
  res.neg = s.neg;
  const int h = s.top();
  const int ex = h - kOffset;
  if (out == Out::fp16) {
    int q = ex - 10 > -24 ? ex - 10 : -24;
    const int lo = q + kOffset;
    std::uint64_t r = s.bits(lo, h - lo + 1 > 0 ? h - lo + 1 : 0);
    if (s.bit(lo - 1) && (s.any_below(lo - 1) || (r & 1u))) ++r;
    // 65504 = 2047 2^5 is the largest finite fp16.
    if (static_cast<double>(r) * __builtin_ldexp(1.0, q) > 65504.0) res.inf = true;
    res.r = r;
    res.q = q;
    return res;
  }
  const int keep = e8m13 ? 13 : 23;
  if (ex >= 128) {
    res.inf = true;
    return res;
  }
  const int q = ex - keep > -126 - keep ? ex - keep : -126 - keep;
  const int lo = q + kOffset;
  res.r = h >= lo ? s.bits(lo, h - lo + 1) : 0;
  res.q = q;
  return res;
}

// The result as a double (NaN for the canonical NaN).
inline double value_of(const Result& r) {
  if (r.nan) return std::nan("");
  if (r.inf) return r.neg ? -INFINITY : INFINITY;
  const double v = std::ldexp(static_cast<double>(r.r), r.q);
  return r.neg ? -v : v;
}

inline Result fused_dot_add(const Params& p, Mode mode, const Spec& sa, const Spec& sb,
                            const std::vector<std::uint64_t>& a,
                            const std::vector<std::uint64_t>& b, std::uint64_t c_bits, Out out,
                            int scale_exp = 0) {
  const Spec& sc = out == Out::fp16 ? kFp16 : kFp32;
  auto operand = [&](const Spec& s, std::uint64_t bits) {
    return decode(s, p.tf32 ? (bits & 0xFFFFE000u) : bits);
  };
  const std::size_t n = a.size();
  std::vector<Decoded> da(n), db(n);
  for (std::size_t i = 0; i < n; ++i) {
    da[i] = operand(sa, a[i]);
    db[i] = operand(sb, b[i]);
  }
  const Decoded dc = decode(sc, c_bits);
  // Special values first.
  Result res;
  bool pos_inf = false, neg_inf = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (da[i].cls == Class::nan || db[i].cls == Class::nan) res.nan = true;
    const bool ia = da[i].cls == Class::inf, ib = db[i].cls == Class::inf;
    if (ia || ib) {
      const bool za = !ia && da[i].m == 0, zb = !ib && db[i].m == 0;
      if (za || zb) {
        res.nan = true;
      } else {
        (da[i].neg != db[i].neg ? neg_inf : pos_inf) = true;
      }
    }
  }
  if (dc.cls == Class::nan) res.nan = true;
  if (dc.cls == Class::inf) (dc.neg ? neg_inf : pos_inf) = true;
  if (pos_inf && neg_inf) res.nan = true;
  if (res.nan) return res;
  if (pos_inf || neg_inf) {
    res.inf = true;
    res.neg = neg_inf;
    return res;
  }
  // The fp16 D's c is an fp16 value; its exponent as an fp32 value (the model decomposes c as
  // fp32): recompute e from the exact value m 2^x.
  int c_exp = dc.e;
  if (dc.m != 0) {
    int top = 63 - __builtin_clzll(dc.m);
    c_exp = dc.x + top;
    if (c_exp < -126) c_exp = -126;
  }
  int e_max = out == Out::fp16 ? p.min_exp_fp16 : p.min_exp;
  for (std::size_t i = 0; i < n; ++i)
    if (da[i].m != 0 && db[i].m != 0 && da[i].e + db[i].e + scale_exp > e_max)
      e_max = da[i].e + db[i].e + scale_exp;
  const bool c_aligned = mode != Mode::c_last;
  if (c_aligned && dc.m != 0 && c_exp > e_max) e_max = c_exp;
  const int f = p.frac_bits + (mode == Mode::f_plus_one) - (mode == Mode::f_minus_one);
  const int unit = e_max - f + kOffset;  // the bit of 2^(E - F)
  auto term = [&](std::uint64_t m, int x, bool neg) {
    Big t = shifted(m, x + kOffset, neg);
    if (mode == Mode::round_nearest) {
      const bool up = t.bit(unit - 1) && (t.any_below(unit - 1) || t.bit(unit));
      t.clear_below(unit);
      if (up) add_pow2(t, unit);
    } else {
      t.clear_below(unit);
    }
    if (t.zero()) t.neg = false;
    return t;
  };
  Big sum;
  for (std::size_t i = 0; i < n; ++i) {
    if (da[i].m == 0 || db[i].m == 0) continue;
    accumulate(sum, term(da[i].m * db[i].m, da[i].x + db[i].x + scale_exp, da[i].neg != db[i].neg));
  }
  if (dc.m != 0) {
    if (c_aligned) {
      accumulate(sum, term(dc.m, dc.x, dc.neg));
    } else {
      accumulate(sum, shifted(dc.m, dc.x + kOffset, dc.neg));  // added exactly, after
    }
  }
  return round_sum(sum, p.e8m13, out);
}

}  // namespace attndev::test::mma_oracle
