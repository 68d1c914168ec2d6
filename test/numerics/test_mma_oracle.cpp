// The tensor-core model (numerics/mma.hpp) against the independent big-integer oracle
// (mma_oracle.hpp), bit for bit, on scaled_count(10^6) random and adversarial dot-adds per
// profile in the Release build: wide exponent spread, cancellation, terms straddling the
// truncation point, subnormal operands and C, zeros, overflow, inf and NaN. Then the same cases
// through deliberately wrong variants of the rule (the oracle's Mode): each must disagree with
// the correct oracle somewhere, or these cases could not tell a wrong model from a right one.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mma_oracle.hpp"
#include "numerics/mma.hpp"
#include "test_scale.hpp"

using namespace attndev::numerics;
namespace orc = attndev::test::mma_oracle;
using orc::spec_of;
using orc::value_of;

namespace {

// The value of a pattern as a double, from the oracle's own decoding (not numerics::decode).
double value_of(const orc::Spec& s, std::uint64_t bits) {
  const orc::Decoded d = orc::decode(s, bits);
  if (d.cls == orc::Class::nan) return std::nan("");
  if (d.cls == orc::Class::inf) return d.neg ? -INFINITY : INFINITY;
  const double v = std::ldexp(static_cast<double>(d.m), d.x);
  return d.neg ? -v : v;
}

bool same(double model, const orc::Result& want, orc::Out out) {
  if (want.nan) {
    std::uint32_t bits;
    const float f = static_cast<float>(model);
    std::memcpy(&bits, &f, 4);
    return bits == (out == orc::Out::fp16 ? 0x7FFFE000u : 0x7FFFFFFFu);  // canonical NaN
  }
  const double w = value_of(want);
  return model == w && std::signbit(model) == std::signbit(w);
}

// A random pattern of spec s with its biased exponent in [lo, hi] (clamped to the finite
// range), random fraction and sign.
struct Gen {
  std::mt19937_64 rng;
  std::uint64_t u(std::uint64_t n) { return rng() % n; }
  std::uint64_t pattern(const orc::Spec& s, int lo, int hi, bool allow_neg = true) {
    const int all_ones = (1 << s.exponent_bits) - 1;
    const int top = s.has_inf ? all_ones - 1 : all_ones;
    lo = lo < 0 ? 0 : lo;
    hi = hi > top ? top : hi;
    hi = hi < lo ? lo : hi;
    const int biased = lo + static_cast<int>(u(static_cast<std::uint64_t>(hi - lo + 1)));
    std::uint64_t frac = rng() & ((std::uint64_t{1} << s.fraction_bits) - 1u);
    if (!s.has_inf && biased == all_ones && frac == (std::uint64_t{1} << s.fraction_bits) - 1u)
      frac -= 1;  // e4m3's NaN pattern: take the largest finite value instead
    const std::uint64_t sign = allow_neg && (rng() & 1u) ? 1u : 0u;
    return (sign << (s.storage_bits - 1)) |
           (static_cast<std::uint64_t>(biased) << s.fraction_bits) | frac;
  }
  std::uint64_t negate(const orc::Spec& s, std::uint64_t bits) {
    return bits ^ (std::uint64_t{1} << (s.storage_bits - 1));
  }
  std::uint64_t special(const orc::Spec& s) {  // inf or NaN (e4m3: NaN only)
    const std::uint64_t exp = ((std::uint64_t{1} << s.exponent_bits) - 1u) << s.fraction_bits;
    const std::uint64_t frac_mask = (std::uint64_t{1} << s.fraction_bits) - 1u;
    const std::uint64_t sign = (rng() & 1u) << (s.storage_bits - 1);
    if (!s.has_inf || (rng() & 3u) == 0) return sign | exp | frac_mask;  // NaN
    return sign | exp;                                                   // inf
  }
};

struct Case {
  std::vector<std::uint64_t> a, b;
  std::uint64_t c = 0;
  orc::Out out = orc::Out::fp32;
};

// One random or adversarial case for a block of n products (kinds chosen by `kind`).
Case make_case(Gen& g, int kind, int n, const orc::Spec& sa, const orc::Spec& sb,
               const orc::Spec& sc, int frac_bits) {
  Case k;
  k.a.resize(static_cast<std::size_t>(n));
  k.b.resize(static_cast<std::size_t>(n));
  const int bias_a = sa.bias, bias_b = sb.bias, bias_c = sc.bias;
  const int max_a = (1 << sa.exponent_bits) - 1, max_b = (1 << sb.exponent_bits) - 1;
  const int max_c = (1 << sc.exponent_bits) - 2;
  auto c_near = [&](int e) { return g.pattern(sc, e + bias_c - 2, e + bias_c + 2); };
  switch (kind) {
    case 0:  // typical magnitudes
      for (int i = 0; i < n; ++i) {
        k.a[i] = g.pattern(sa, bias_a - 3, bias_a + 3);
        k.b[i] = g.pattern(sb, bias_b - 3, bias_b + 3);
      }
      k.c = g.u(4) == 0 ? 0 : c_near(0);
      break;
    case 1:  // wide exponent spread, subnormals and zeros included
      for (int i = 0; i < n; ++i) {
        k.a[i] = g.u(16) == 0 ? 0 : g.pattern(sa, 0, max_a);
        k.b[i] = g.u(16) == 0 ? 0 : g.pattern(sb, 0, max_b);
      }
      k.c = g.u(8) == 0 ? 0 : g.pattern(sc, 0, max_c);
      break;
    case 2: {  // cancellation: pairs of opposite products, one term nudged, C near their sum
      for (int i = 0; i + 1 < n; i += 2) {
        k.a[i] = g.pattern(sa, bias_a - 2, bias_a + 2);
        k.b[i] = g.pattern(sb, bias_b - 2, bias_b + 2);
        k.a[i + 1] = k.a[i] ^ (g.u(4) == 0 ? 1u : 0u);
        k.b[i + 1] = g.negate(sb, k.b[i]);
      }
      if (n % 2) {
        k.a[n - 1] = g.pattern(sa, bias_a - 12, bias_a - 4);
        k.b[n - 1] = g.pattern(sb, bias_b - 12, bias_b - 4);
      }
      k.c = g.u(2) ? 0 : c_near(-static_cast<int>(g.u(20)));
      break;
    }
    case 3: {  // terms straddling the truncation point below one dominant product
      if (n == 0) break;
      k.a[0] = g.pattern(sa, bias_a, bias_a);
      k.b[0] = g.pattern(sb, bias_b, bias_b);
      for (int i = 1; i < n; ++i) {
        // product exponents around -F (a split between the two operands as their ranges allow)
        const int target = -frac_bits - 2 + static_cast<int>(g.u(6));
        int ea = target / 2, eb = target - ea;
        if (ea + bias_a < 1) ea = 1 - bias_a;
        eb = target - ea;
        if (eb + bias_b < 1) eb = 1 - bias_b;
        k.a[i] = g.pattern(sa, ea + bias_a, ea + bias_a);
        k.b[i] = g.pattern(sb, eb + bias_b, eb + bias_b);
      }
      k.c = g.u(3) == 0 ? 0 : g.pattern(sc, bias_c - 1, bias_c + 1);
      break;
    }
    case 4:  // subnormal operands and a subnormal (or tiny) C
      for (int i = 0; i < n; ++i) {
        k.a[i] = g.pattern(sa, 0, 2);
        k.b[i] = g.pattern(sb, 0, 2);
      }
      k.c = g.u(2) ? g.pattern(sc, 0, 0) : g.pattern(sc, 0, 6);
      break;
    case 5:  // inf and NaN among finite terms; 0 * inf
      for (int i = 0; i < n; ++i) {
        k.a[i] = g.pattern(sa, bias_a - 3, bias_a + 3);
        k.b[i] = g.pattern(sb, bias_b - 3, bias_b + 3);
      }
      if (n > 0) {
        const int i = static_cast<int>(g.u(static_cast<std::uint64_t>(n)));
        k.a[i] = g.special(sa);
        if (g.u(3) == 0) k.b[i] = 0;
        if (g.u(3) == 0 && n > 1) k.b[(i + 1) % n] = g.special(sb);
      }
      if (g.u(4) == 0) k.c = g.special(sc);
      break;
    case 6:  // large products and C: overflow of the output type
      for (int i = 0; i < n; ++i) {
        k.a[i] = g.pattern(sa, max_a - 3, max_a);
        k.b[i] = g.pattern(sb, max_b - 3, max_b, /*allow_neg=*/g.u(4) == 0);
      }
      k.c = g.pattern(sc, max_c - 2, max_c, false);
      break;
    default:  // zero operands beside large partners; C alone
      for (int i = 0; i < n; ++i) {
        const bool zero = g.u(2) == 0;
        k.a[i] = zero ? (g.u(2) ? 0 : g.negate(sa, 0)) : g.pattern(sa, 1, bias_a - 4);
        k.b[i] = zero ? g.pattern(sb, max_b - 4, max_b) : g.pattern(sb, 1, bias_b - 4);
      }
      k.c = g.u(2) ? 0 : g.pattern(sc, 0, max_c);
      break;
  }
  return k;
}

struct Tally {
  std::size_t compared = 0, mismatches = 0;
  std::string first;
};

// Up to `cases` dot-adds; a wrong variant (check_model false) stops at its first mismatch, all
// that its negative control needs.
template <class P>
Tally run_profile(Format fa, Format fb, std::size_t cases, std::uint64_t seed, orc::Mode mode,
                  bool check_model) {
  const orc::Spec& sa = spec_of(fa);
  const orc::Spec& sb = spec_of(fb);
  const orc::Params params{P::kFracBits, P::kE8m13, P::kMinExp, P::kMinExpFp16,
                           P::kKind == mma::Kind::tf32};
  const mma::Operands op = mma::operands(fa, fb);
  const bool fp16_out_possible = P::kKind == mma::Kind::f8 || (fa == Format::fp16 && fb == fa);
  Gen g{std::mt19937_64(seed)};
  Tally t;
  std::vector<double> a, b;
  for (std::size_t i = 0; i < cases; ++i) {
    const orc::Out out = fp16_out_possible && g.u(4) == 0 ? orc::Out::fp16 : orc::Out::fp32;
    const orc::Spec& sc = out == orc::Out::fp16 ? orc::kFp16 : orc::kFp32;
    const int n = g.u(4) == 0 ? static_cast<int>(g.u(P::kBlock + 1)) : P::kBlock;
    Case k = make_case(g, static_cast<int>(g.u(8)), n, sa, sb, sc, P::kFracBits);
    k.out = out;
    const orc::Result want =
        orc::fused_dot_add(params, orc::Mode::exact, sa, sb, k.a, k.b, k.c, out);
    a.resize(k.a.size());
    b.resize(k.b.size());
    for (std::size_t j = 0; j < k.a.size(); ++j) {
      a[j] = value_of(sa, k.a[j]);
      b[j] = value_of(sb, k.b[j]);
    }
    const double c = value_of(sc, k.c);
    bool ok;
    if (check_model) {
      const mma::Output mo = out == orc::Out::fp16 ? mma::Output::fp16 : mma::Output::fp32;
      ok = same(mma::fused_dot_add<P>(op, a.data(), 1, b.data(), 1, n, c, mo), want, out);
    } else {
      const orc::Result got = orc::fused_dot_add(params, mode, sa, sb, k.a, k.b, k.c, out);
      ok = got.nan == want.nan && (got.nan || same(value_of(got), want, out));
    }
    ++t.compared;
    if (!ok && t.mismatches++ == 0) {
      t.first = "case " + std::to_string(i) + " (seed " + std::to_string(seed) +
                "), n = " + std::to_string(n) + ", c bits " + std::to_string(k.c);
      if (!check_model) break;
    }
  }
  return t;
}

template <class P>
void check_profile(std::initializer_list<std::pair<Format, Format>> pairs, std::uint64_t seed) {
  const std::size_t total = attndev::test::scaled_count(1'000'000);
  const std::size_t per_pair = total / pairs.size();
  std::size_t compared = 0;
  for (const auto& [fa, fb] : pairs) {
    INFO(std::string(mma::arch_name(P::kArch))
         << " " << traits(fa).name << " x " << traits(fb).name);
    const Tally t = run_profile<P>(fa, fb, per_pair, seed++, orc::Mode::exact, true);
    INFO("first mismatch: " << t.first);
    CHECK(t.mismatches == 0);
    compared += t.compared;
    // The wrong variants, on the first cases of the same stream (up to 20,000): each must be
    // caught.
    for (orc::Mode m : {orc::Mode::round_nearest, orc::Mode::f_plus_one, orc::Mode::f_minus_one,
                        orc::Mode::c_last}) {
      const Tally w = run_profile<P>(fa, fb, 20'000, seed - 1, m, false);
      INFO("wrong variant " << static_cast<int>(m));
      CHECK(w.mismatches > 0);
    }
  }
  CHECK(compared == per_pair * pairs.size());
}

}  // namespace

TEST_CASE("mma oracle: sm80 fp16/bf16 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm80F16>({{Format::fp16, Format::fp16}, {Format::bf16, Format::bf16}}, 100);
}
TEST_CASE("mma oracle: sm80 tf32 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm80Tf32>({{Format::fp32, Format::fp32}}, 200);
}
TEST_CASE("mma oracle: sm89 fp8 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm89F8>({{Format::fp8_e4m3, Format::fp8_e4m3},
                              {Format::fp8_e5m2, Format::fp8_e5m2},
                              {Format::fp8_e4m3, Format::fp8_e5m2}},
                             300);
}
TEST_CASE("mma oracle: sm90 fp16/bf16 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm90F16>({{Format::fp16, Format::fp16}, {Format::bf16, Format::bf16}}, 400);
}
TEST_CASE("mma oracle: sm90 tf32 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm90Tf32>({{Format::fp32, Format::fp32}}, 500);
}
TEST_CASE("mma oracle: sm90 fp8 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm90F8>({{Format::fp8_e4m3, Format::fp8_e4m3},
                              {Format::fp8_e5m2, Format::fp8_e5m2},
                              {Format::fp8_e5m2, Format::fp8_e4m3}},
                             600);
}
TEST_CASE("mma oracle: sm100 fp16/bf16 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm100F16>({{Format::fp16, Format::fp16}, {Format::bf16, Format::bf16}}, 700);
}
TEST_CASE("mma oracle: sm100 tf32 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm100Tf32>({{Format::fp32, Format::fp32}}, 800);
}
TEST_CASE("mma oracle: sm100 fp8 dot-adds equal the big-integer oracle bit for bit",
          "[mma][oracle]") {
  check_profile<mma::Sm100F8>(
      {{Format::fp8_e4m3, Format::fp8_e4m3}, {Format::fp8_e5m2, Format::fp8_e5m2}}, 900);
}

TEST_CASE("mma oracle: sm100 block-scaled mxf8f6f4 adds the scale exponents before alignment",
          "[mma][oracle]") {
  // The block scales' exponents join every product's before the alignment: the oracle with
  // scale_exp against dot_block_scaled, over random scales (including the ue8m0 extremes).
  using P = mma::Sm100MxF8;
  Gen g{std::mt19937_64(1000)};
  const orc::Params params{P::kFracBits, false, P::kMinExp, P::kMinExpFp16, false};
  const std::size_t cases = attndev::test::scaled_count(100'000);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < cases; ++i) {
    Case k = make_case(g, static_cast<int>(g.u(8)), P::kBlock, orc::kE4m3, orc::kE4m3, orc::kFp32,
                       P::kFracBits);
    const int scale = static_cast<int>(g.u(2 * 254 + 1)) - 254;  // xa + xb, each in [-127, 127]
    const orc::Result want = orc::fused_dot_add(params, orc::Mode::exact, orc::kE4m3, orc::kE4m3,
                                                k.a, k.b, k.c, orc::Out::fp32, scale);
    std::vector<double> a(k.a.size()), b(k.b.size());
    for (std::size_t j = 0; j < a.size(); ++j) {
      a[j] = value_of(orc::kE4m3, k.a[j]);
      b[j] = value_of(orc::kE4m3, k.b[j]);
    }
    const double got =
        mma::dot_block_scaled<P>(Format::fp8_e4m3, Format::fp8_e4m3, a.data(), 1, b.data(), 1,
                                 P::kBlock, &scale, value_of(orc::kFp32, k.c));
    if (!same(got, want, orc::Out::fp32)) {
      if (mismatches++ == 0) UNSCOPED_INFO("first mismatch at case " << i << " scale " << scale);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("mma oracle: a k-loop is the chain of the profile's dot-adds, D fed back as C",
          "[mma][oracle]") {
  // dot() over K = 4 instructions against the oracle run block by block, its D (as fp32 bits)
  // the next block's C: the split inside an instruction and the chaining across instructions.
  Gen g{std::mt19937_64(1100)};
  const std::size_t cases = attndev::test::scaled_count(20'000);
  auto run = [&](auto profile, Format f) {
    using P = decltype(profile);
    const orc::Params params{P::kFracBits, P::kE8m13, P::kMinExp, P::kMinExpFp16,
                             P::kKind == mma::Kind::tf32};
    const orc::Spec& s = spec_of(f);
    const int k_len = 4 * P::kInstructionK;
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < cases; ++i) {
      std::vector<double> a(static_cast<std::size_t>(k_len)), b(a.size());
      std::vector<std::uint64_t> ab(a.size()), bb(a.size());
      for (int j = 0; j < k_len; ++j) {
        ab[j] = g.pattern(s, s.bias - 4, s.bias + 4);
        bb[j] = g.pattern(s, s.bias - 4, s.bias + 4);
        a[j] = value_of(s, ab[j]);
        b[j] = value_of(s, bb[j]);
      }
      std::uint64_t c_bits = g.pattern(orc::kFp32, 127 - 2, 127 + 2);
      const double got = mma::dot<P>(mma::operands(f, f), a.data(), 1, b.data(), 1, k_len,
                                     value_of(orc::kFp32, c_bits));
      for (int k0 = 0; k0 < k_len; k0 += P::kBlock) {
        const std::vector<std::uint64_t> a_blk(ab.begin() + k0, ab.begin() + k0 + P::kBlock);
        const std::vector<std::uint64_t> b_blk(bb.begin() + k0, bb.begin() + k0 + P::kBlock);
        const orc::Result r = orc::fused_dot_add(params, orc::Mode::exact, s, s, a_blk, b_blk,
                                                 c_bits, orc::Out::fp32);
        const float d = static_cast<float>(value_of(r));
        std::uint32_t bits;
        std::memcpy(&bits, &d, 4);
        c_bits = bits;
      }
      mismatches += !(got == value_of(orc::kFp32, c_bits));
    }
    return mismatches;
  };
  CHECK(run(mma::Sm80F16{}, Format::bf16) == 0);
  CHECK(run(mma::Sm90F16{}, Format::fp16) == 0);
  CHECK(run(mma::Sm89F8{}, Format::fp8_e4m3) == 0);
  CHECK(run(mma::Sm90F8{}, Format::fp8_e5m2) == 0);
  CHECK(run(mma::Sm80Tf32{}, Format::fp32) == 0);
}
