// The tensor-core model's published signature behaviours, each a small crafted dot-add whose
// answer is written out by hand from the rule, checked on the model (numerics/mma.hpp) and on
// deliberately wrong variants of the rule (the oracle of mma_oracle.hpp run in a wrong Mode):
// every check says which wrong variant it catches (test/README.md has the table).
//   * truncation, not rounding, and no guard bit (Fasi et al. 2021);
//   * the sum is not monotonic (Fasi et al. 2021);
//   * C is aligned together with the products, neither first nor last (both bit-accurate models);
//   * k16 runs as two k8 halves on sm_80 and as one block on sm_90 (MMA-Sim is_split_k;
//     Khattak & Mikaitis fma = 8 / 16);
//   * SageAttention2's probe: Hopper fp8 with A = B = 0 returns C with its low 10 bits cleared;
//   * the choices where the two published models differ (zero terms, sign of a truncated zero,
//     overflow), tf32 operands truncated, special values, an fp16 D rounded to nearest even;
//   * every profile's parameters equal the published ones (a table typed here from the papers).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "mma_oracle.hpp"
#include "numerics/encode.hpp"
#include "numerics/mma.hpp"

using namespace attndev::numerics;
namespace orc = attndev::test::mma_oracle;
using orc::spec_of;
using orc::value_of;

namespace {

// The implementation under test: the model, or a wrong variant.
enum class Impl : std::uint8_t {
  model,
  round_nearest,  // terms rounded to nearest at the truncation point
  f_plus_one,     // F one bit too many
  c_last,         // C added after the products' fused sum
  guard_bits,     // no truncation of the terms at all (an exact sum, then the final rounding)
  fp32_d,         // fp8 D kept with 23 fraction bits (no e8m13)
  block_16,       // sm_80's k16 as one block of 16
  block_8,        // sm_90's k16 as two blocks of 8
};

// A wrong variant's chain of dot-adds (the oracle in a wrong mode), blocks of `block`.
template <class P>
double wrong_dot(Impl impl, Format fa, Format fb, const std::vector<double>& a,
                 const std::vector<double>& b, double c, mma::Output out) {
  orc::Params params{P::kFracBits, P::kE8m13, P::kMinExp, P::kMinExpFp16,
                     P::kKind == mma::Kind::tf32};
  orc::Mode mode = orc::Mode::exact;
  int block = P::kBlock;
  switch (impl) {
    case Impl::round_nearest:
      mode = orc::Mode::round_nearest;
      break;
    case Impl::f_plus_one:
      mode = orc::Mode::f_plus_one;
      break;
    case Impl::c_last:
      mode = orc::Mode::c_last;
      break;
    case Impl::guard_bits:
      params.frac_bits += 60;
      break;
    case Impl::fp32_d:
      params.e8m13 = false;
      break;
    case Impl::block_16:
      block = 16;
      break;
    case Impl::block_8:
      block = 8;
      break;
    case Impl::model:
      break;
  }
  const orc::Out o = out == mma::Output::fp16 ? orc::Out::fp16 : orc::Out::fp32;
  const Format fc = out == mma::Output::fp16 ? Format::fp16 : Format::fp32;
  auto bits = [](Format f, double x) {
    return f == Format::fp32 || f == Format::tf32
               ? static_cast<std::uint64_t>(bits_of(static_cast<float>(x)))
               : encode(f, x);
  };
  const std::size_t k = a.size();
  for (std::size_t k0 = 0; k0 < k || k0 == 0; k0 += static_cast<std::size_t>(block)) {
    std::vector<std::uint64_t> ab, bb;
    for (std::size_t i = k0; i < k && i < k0 + static_cast<std::size_t>(block); ++i) {
      ab.push_back(bits(fa, a[i]));
      bb.push_back(bits(fb, b[i]));
    }
    c = value_of(
        orc::fused_dot_add(params, mode, spec_of(fa), spec_of(fb), ab, bb, bits(fc, c), o));
    if (k == 0) break;
  }
  return c;
}

template <class P>
double run(Impl impl, Format fa, Format fb, const std::vector<double>& a,
           const std::vector<double>& b, double c, mma::Output out = mma::Output::fp32) {
  if (impl == Impl::model)
    return mma::dot<P>(mma::operands(fa, fb), a.data(), 1, b.data(), 1, static_cast<int>(a.size()),
                       c, out);
  return wrong_dot<P>(impl, fa, fb, a, b, c, out);
}

// Operands x, y of format f with x y == value (a power-of-two split), for crafted products.
bool split(Format f, double value, double& x, double& y) {
  int e;
  const double m = std::frexp(std::fabs(value), &e);  // value = m 2^e
  for (int ey = -40; ey <= 40; ++ey) {
    const double yy = std::ldexp(1.0, ey), xx = std::ldexp(m, e - ey);
    if (representable(f, xx) && representable(f, yy)) {
      x = value < 0 ? -xx : xx;
      y = yy;
      return true;
    }
  }
  return false;
}

// RZ of a positive exact value to `keep` fraction bits (a normal result).
double rz(double v, int keep) {
  int e;
  std::frexp(v, &e);
  const double q = std::ldexp(1.0, e - 1 - keep);
  return std::floor(v / q) * q;
}

// ---- The signature checks: true when the implementation behaves as published. ----

// One dominant product 1 and (block - 1) products of 1.5 units of 2^-F: truncated each to one
// unit, D = RZ(1 + (block - 1) 2^-F). Rounding to nearest makes each two units.
template <class P>
bool truncates_terms(Impl impl, Format f) {
  const int n = P::kBlock;
  std::vector<double> a(static_cast<std::size_t>(n)), b(a.size());
  a[0] = 1;
  b[0] = 1;
  for (int i = 1; i < n; ++i)
    if (!split(f, std::ldexp(1.5, -P::kFracBits), a[i], b[i])) return false;
  const double want = rz(1 + (n - 1) * std::ldexp(1.0, -P::kFracBits), P::kE8m13 ? 13 : 23);
  return run<P>(impl, f, f, a, b, 0.0) == want;
}

// 1 - 2^-(F + 2 or more): the tiny product is below one unit and lost; with guard bits the
// exact 1 - tiny rounds toward zero to the number below 1.
template <class P>
bool no_guard_bit(Impl impl, Format f) {
  std::vector<double> a(2), b(2);
  a[0] = b[0] = 1;
  for (int k = P::kFracBits + 2; k < P::kFracBits + 20; ++k)
    if (split(f, -std::ldexp(1.0, -k), a[1], b[1])) return run<P>(impl, f, f, a, b, 0.0) == 1.0;
  return false;
}

// Raising C from 2 - 2^-23 to 2 raises E by one; the block's products of 1.75 units then
// truncate to nothing: D decreases although an addend increased. (Blocks of at least 16 units
// of 2^-F: the tf32 blocks of 4 and 8 products add too little to reach fp32's next number.)
template <class P>
bool non_monotonic(Impl impl, Format f) {
  const int n = P::kBlock;
  std::vector<double> a(static_cast<std::size_t>(n)), b(a.size());
  for (int i = 0; i < n; ++i)
    if (!split(f, std::ldexp(1.75, -P::kFracBits), a[i], b[i])) return false;
  const double lower_c = run<P>(impl, f, f, a, b, 2.0 - std::ldexp(1.0, -23));
  const double higher_c = run<P>(impl, f, f, a, b, 2.0);
  return lower_c > higher_c && higher_c == 2.0;
}

// C = 1 aligned with the block's products of 1.75 units: each truncated to one unit,
// D = RZ(1 + block 2^-F). C added after the products' own sum would keep their 0.75s.
template <class P>
bool c_aligned_with_products(Impl impl, Format f) {
  const int n = P::kBlock;
  std::vector<double> a(static_cast<std::size_t>(n)), b(a.size());
  for (int i = 0; i < n; ++i)
    if (!split(f, std::ldexp(1.75, -P::kFracBits), a[i], b[i])) return false;
  const double want = rz(1 + n * std::ldexp(1.0, -P::kFracBits), P::kE8m13 ? 13 : 23);
  return run<P>(impl, f, f, a, b, 1.0) == want;
}

// k16 with 1 - 1 in its first half and eight products of 2^-30 in its second: two k8 halves
// keep them (the second half starts from C = +0), one block of 16 aligns them to 2^0 and drops
// them. Returns D.
template <class P>
double k16_split_probe(Impl impl) {
  std::vector<double> a(16, 0.0), b(16, 0.0);
  a[0] = b[0] = 1;
  a[1] = 1;
  b[1] = -1;
  for (int i = 8; i < 16; ++i) a[i] = b[i] = std::ldexp(1.0, -15);
  return run<P>(impl, Format::fp16, Format::fp16, a, b, 0.0);
}

// SageAttention2's probe: A = B = 0 and a C with more than 13 fraction bits; D = C with its low
// 10 bits cleared, for `count` random normal C.
template <class P>
bool sage_probe(Impl impl, int count) {
  std::mt19937 rng(7);
  const std::vector<double> zeros(static_cast<std::size_t>(P::kInstructionK), 0.0);
  for (int i = 0; i < count; ++i) {
    const std::uint32_t bits =
        ((rng() % 200 + 20) << 23) | (rng() & 0x7FFFFFu) | (rng() & 1u) << 31;
    const double d = run<P>(impl, Format::fp8_e4m3, Format::fp8_e4m3, zeros, zeros,
                            static_cast<double>(float_from_bits(bits)));
    if (bits_of(static_cast<float>(d)) != (bits & ~0x3FFu)) return false;
  }
  return true;
}

// An fp8 D with 13 fraction bits: 1.5 x 1.5 = 2.25 (exponent 0, significand 2.25) plus one
// unit 2^-13 sums to 2.25 + 2^-13 on the grid of E = 0; normalised to exponent 1 it keeps 13
// fraction bits there, 2^-12 apart: 2.25.
template <class P>
bool e8m13_d(Impl impl) {
  std::vector<double> a = {1.5, 0.0}, b = {1.5, 0.0};
  if (!split(Format::fp8_e4m3, std::ldexp(1.0, -P::kFracBits), a[1], b[1])) return false;
  return run<P>(impl, Format::fp8_e4m3, Format::fp8_e4m3, a, b, 0.0) == 2.25;
}

}  // namespace

TEST_CASE("mma signature: terms are truncated toward zero, not rounded", "[mma][signature]") {
  // Caught: round_nearest, f_plus_one (one unit is then 2^-(F+1)).
  CHECK(truncates_terms<mma::Sm80F16>(Impl::model, Format::fp16));
  CHECK(truncates_terms<mma::Sm80Tf32>(Impl::model, Format::fp32));
  CHECK(truncates_terms<mma::Sm90F16>(Impl::model, Format::bf16));
  CHECK(truncates_terms<mma::Sm90Tf32>(Impl::model, Format::fp32));
  CHECK(truncates_terms<mma::Sm89F8>(Impl::model, Format::fp8_e4m3));
  CHECK(truncates_terms<mma::Sm90F8>(Impl::model, Format::fp8_e5m2));
  CHECK(truncates_terms<mma::Sm100F16>(Impl::model, Format::fp16));
  CHECK(truncates_terms<mma::Sm100F8>(Impl::model, Format::fp8_e5m2));
  CHECK_FALSE(truncates_terms<mma::Sm80F16>(Impl::round_nearest, Format::fp16));
  CHECK_FALSE(truncates_terms<mma::Sm90F16>(Impl::round_nearest, Format::bf16));
  CHECK_FALSE(truncates_terms<mma::Sm90F8>(Impl::round_nearest, Format::fp8_e5m2));
  CHECK_FALSE(truncates_terms<mma::Sm80F16>(Impl::f_plus_one, Format::fp16));
  CHECK_FALSE(truncates_terms<mma::Sm90F16>(Impl::f_plus_one, Format::bf16));
  CHECK_FALSE(truncates_terms<mma::Sm90F8>(Impl::f_plus_one, Format::fp8_e5m2));
}

TEST_CASE("mma signature: no guard bit: 1 - 2^-(F+2) comes back as 1", "[mma][signature]") {
  // Caught: guard_bits (an exact sum rounded toward zero gives the number below 1).
  CHECK(no_guard_bit<mma::Sm80F16>(Impl::model, Format::fp16));
  CHECK(no_guard_bit<mma::Sm90F16>(Impl::model, Format::bf16));
  CHECK(no_guard_bit<mma::Sm90F8>(Impl::model, Format::fp8_e4m3));
  CHECK(no_guard_bit<mma::Sm100Tf32>(Impl::model, Format::fp32));
  CHECK_FALSE(no_guard_bit<mma::Sm80F16>(Impl::guard_bits, Format::fp16));
  CHECK_FALSE(no_guard_bit<mma::Sm90F16>(Impl::guard_bits, Format::bf16));
  CHECK_FALSE(no_guard_bit<mma::Sm90F8>(Impl::guard_bits, Format::fp8_e4m3));
}

TEST_CASE("mma signature: the sum is not monotonic: a larger C gives a smaller D",
          "[mma][signature]") {
  // Caught: round_nearest, c_last, guard_bits.
  CHECK(non_monotonic<mma::Sm80F16>(Impl::model, Format::fp16));
  CHECK(non_monotonic<mma::Sm89F8>(Impl::model, Format::fp8_e4m3));
  CHECK(non_monotonic<mma::Sm90F16>(Impl::model, Format::bf16));
  CHECK(non_monotonic<mma::Sm90F8>(Impl::model, Format::fp8_e5m2));
  CHECK(non_monotonic<mma::Sm100F16>(Impl::model, Format::fp16));
  CHECK(non_monotonic<mma::Sm100F8>(Impl::model, Format::fp8_e5m2));
  for (Impl wrong : {Impl::round_nearest, Impl::c_last, Impl::guard_bits}) {
    INFO("wrong variant " << static_cast<int>(wrong));
    CHECK_FALSE(non_monotonic<mma::Sm80F16>(wrong, Format::fp16));
    CHECK_FALSE(non_monotonic<mma::Sm90F16>(wrong, Format::bf16));
  }
}

TEST_CASE("mma signature: C is aligned together with the products", "[mma][signature]") {
  // Caught: c_last, round_nearest, f_plus_one.
  CHECK(c_aligned_with_products<mma::Sm80F16>(Impl::model, Format::bf16));
  CHECK(c_aligned_with_products<mma::Sm90F16>(Impl::model, Format::fp16));
  CHECK(c_aligned_with_products<mma::Sm89F8>(Impl::model, Format::fp8_e4m3));
  CHECK(c_aligned_with_products<mma::Sm100Tf32>(Impl::model, Format::fp32));
  for (Impl wrong : {Impl::c_last, Impl::round_nearest, Impl::f_plus_one}) {
    INFO("wrong variant " << static_cast<int>(wrong));
    CHECK_FALSE(c_aligned_with_products<mma::Sm80F16>(wrong, Format::bf16));
    CHECK_FALSE(c_aligned_with_products<mma::Sm90F16>(wrong, Format::fp16));
  }
}

TEST_CASE("mma signature: k16 is two k8 halves on sm80 and sm89, one block on sm90 and sm100",
          "[mma][signature]") {
  // Caught: block_16 on sm_80, block_8 on sm_90.
  const double kept = std::ldexp(1.0, -27);  // 8 x 2^-30, exact in the second half
  CHECK(k16_split_probe<mma::Sm80F16>(Impl::model) == kept);
  CHECK(k16_split_probe<mma::Sm90F16>(Impl::model) == 0.0);
  CHECK(k16_split_probe<mma::Sm100F16>(Impl::model) == 0.0);
  CHECK(k16_split_probe<mma::Sm80F16>(Impl::block_16) == 0.0);
  CHECK(k16_split_probe<mma::Sm90F16>(Impl::block_8) == kept);
  // sm89 runs its 16-bit mma as sm80 does (the chooser's profile).
  bool sm89_is_sm80 = false;
  mma::with_profile(mma::Arch::sm89, mma::Instruction::mma, mma::Kind::f16,
                    [&](auto p) { sm89_is_sm80 = std::is_same_v<decltype(p), mma::Sm80F16>; });
  CHECK(sm89_is_sm80);
}

TEST_CASE("mma signature: SageAttention2's probe, A = B = 0 clears C's low 10 bits, fp8 D in e8m13",
          "[mma][signature]") {
  // The probe shows that neither C's alignment (F = 13) nor D (e8m13) keeps more than 13 bits:
  // a model with 25 bits for fp8 fails it, as sm100's fp8 profile (correctly) does, C coming
  // back whole. A D normalised one binade up shows the e8m13 rounding of D itself (caught:
  // fp32_d).
  CHECK(sage_probe<mma::Sm90F8>(Impl::model, 2000));
  CHECK(sage_probe<mma::Sm89F8>(Impl::model, 2000));
  CHECK_FALSE(sage_probe<mma::Sm100F8>(Impl::model, 2000));
  CHECK(e8m13_d<mma::Sm90F8>(Impl::model));
  CHECK(e8m13_d<mma::Sm89F8>(Impl::model));
  CHECK_FALSE(e8m13_d<mma::Sm90F8>(Impl::fp32_d));
  const std::vector<double> zeros(32, 0.0);
  const double c = static_cast<double>(float_from_bits(0x3F8FFFFFu));
  CHECK(run<mma::Sm100F8>(Impl::model, Format::fp8_e4m3, Format::fp8_e4m3, zeros, zeros, c) == c);
  CHECK(mma::round_accumulator<mma::Sm90F8>(c) ==
        static_cast<double>(float_from_bits(0x3F8FFC00u)));
}

TEST_CASE("mma signature: where the published models differ, Khattak and Mikaitis' choice",
          "[mma][signature]") {
  using P = mma::Sm90F16;
  const mma::Operands bf = mma::operands(Format::bf16, Format::bf16);
  // A zero product takes no part in E (MMA-Sim gives the zero operand exponent -126, here
  // -126 + 100 = -26 > -60, which would truncate the other product to 0).
  {
    const double a[] = {0.0, std::ldexp(1 + 0x1p-7, -30)}, b[] = {0x1p100, 0x1p-30};
    CHECK(mma::dot<P>(bf, a, 1, b, 1, 2, 0.0) == std::ldexp(1 + 0x1p-7, -60));
  }
  // E is at least -133: a product of 2^-150 is on the grid 2^-158 and kept; it truncates to
  // zero only in the final rounding (2^-149 is fp32's smallest subnormal), keeping its sign.
  {
    const double a[] = {-0x1p-75}, b[] = {0x1p-75};
    const double d = mma::dot<P>(bf, a, 1, b, 1, 1, 0.0);
    CHECK(d == 0.0);
    CHECK(std::signbit(d));
    const double a2[] = {0x1p-75, -0x1p-75}, b2[] = {0x1p-75, 0x1p-75};  // an exact zero: +0
    CHECK_FALSE(std::signbit(mma::dot<P>(bf, a2, 1, b2, 1, 2, -0.0)));
  }
  // Overflow is inf (both models), not the largest finite value.
  {
    const double a[] = {std::ldexp(1.5, 127)}, b[] = {2.0};
    CHECK(mma::dot<P>(bf, a, 1, b, 1, 1, 0.0) == INFINITY);
    const double c = static_cast<double>(float_from_bits(0x7F7FFFFFu));
    const double a2[] = {std::ldexp(1.0, 126)}, b2[] = {-4.0};
    CHECK(mma::dot<P>(bf, a2, 1, b2, 1, 1, -c) == -INFINITY);
  }
}

TEST_CASE("mma signature: tf32 operands are truncated, special values, fp16 D to nearest",
          "[mma][signature]") {
  const mma::Operands f32 = mma::operands(Format::fp32, Format::fp32);
  // 1 + 3 2^-12 read as tf32 is 1 (truncated), not 1 + 2^-10 (rounded).
  {
    const double a[] = {1 + 3 * 0x1p-12}, b[] = {1.0};
    CHECK(mma::dot<mma::Sm90Tf32>(f32, a, 1, b, 1, 1, 0.0) == 1.0);
    CHECK(mma::dot<mma::Sm80Tf32>(f32, a, 1, b, 1, 1, 0.0) == 1.0);
  }
  const mma::Operands h = mma::operands(Format::fp16, Format::fp16);
  auto bits = [](double d) { return bits_of(static_cast<float>(d)); };
  {
    const double a[] = {NAN, 1.0}, b[] = {1.0, 1.0};
    CHECK(bits(mma::dot<mma::Sm90F16>(h, a, 1, b, 1, 2, 0.0)) == 0x7FFFFFFFu);
    CHECK(bits(mma::dot<mma::Sm80F16>(h, a, 1, b, 1, 2, 0.0, mma::Output::fp16)) == 0x7FFFE000u);
  }
  {
    const double a[] = {INFINITY, 1.0}, b[] = {0.0, 1.0};  // inf * 0
    CHECK(bits(mma::dot<mma::Sm90F16>(h, a, 1, b, 1, 2, 0.0)) == 0x7FFFFFFFu);
    const double a2[] = {INFINITY, -INFINITY}, b2[] = {1.0, 1.0};  // inf - inf
    CHECK(bits(mma::dot<mma::Sm90F16>(h, a2, 1, b2, 1, 2, 0.0)) == 0x7FFFFFFFu);
    const double a3[] = {INFINITY, 5.0}, b3[] = {-2.0, 1.0};
    CHECK(mma::dot<mma::Sm90F16>(h, a3, 1, b3, 1, 2, 1.0) == -INFINITY);
    CHECK(mma::dot<mma::Sm80F16>(h, a3 + 1, 1, b3 + 1, 1, 1, INFINITY) == INFINITY);
    CHECK(bits(mma::dot<mma::Sm80F16>(h, a3, 1, b, 1, 1, -INFINITY)) == 0x7FFFFFFFu);
  }
  // fp16 D: 1 + 2^-11 + 2^-12 is rounded to nearest, 1 + 2^-10 (toward zero would give 1).
  {
    const double a[] = {1.0, 0x1p-11, 0x1p-12}, b[] = {1.0, 1.0, 1.0};
    CHECK(mma::dot<mma::Sm90F16>(h, a, 1, b, 1, 3, 0.0, mma::Output::fp16) == 1 + 0x1p-10);
    CHECK(mma::dot<mma::Sm90F16>(h, a, 1, b, 1, 3, 0.0) == 1 + 0x1p-11 + 0x1p-12);
  }
}

TEST_CASE("mma profiles carry the published parameters", "[mma][signature]") {
  // Typed from the sources, apart from mma_profiles.hpp: (arch, instruction, kind) -> products
  // per fused block, F, e8m13. Khattak & Mikaitis models/*TC.m (fma, 23 + neab) and MMA-Sim
  // nv_ptx.py (arch_accum_fractional_bits, is_split_k, f32_e8m13).
  struct Row {
    mma::Arch arch;
    mma::Instruction ins;
    mma::Kind kind;
    int block, frac_bits;
    bool e8m13;
  };
  using A = mma::Arch;
  using I = mma::Instruction;
  using K = mma::Kind;
  const Row rows[] = {
      {A::sm80, I::mma, K::f16, 8, 24, false},       {A::sm80, I::mma, K::tf32, 4, 24, false},
      {A::sm89, I::mma, K::f16, 8, 24, false},       {A::sm89, I::mma, K::tf32, 4, 24, false},
      {A::sm89, I::mma, K::f8, 16, 13, true},        {A::sm90, I::mma, K::f16, 16, 25, false},
      {A::sm90, I::wgmma, K::f16, 16, 25, false},    {A::sm90, I::wgmma, K::tf32, 8, 25, false},
      {A::sm90, I::wgmma, K::f8, 32, 13, true},      {A::sm90, I::mma, K::f8, 32, 13, true},
      {A::sm100, I::tcgen05, K::f16, 16, 25, false}, {A::sm100, I::tcgen05, K::tf32, 8, 25, false},
      {A::sm100, I::tcgen05, K::f8, 32, 25, false},  {A::sm100, I::tcgen05, K::mxf8, 32, 25, false},
  };
  for (const Row& r : rows) {
    INFO(mma::arch_name(r.arch) << " " << mma::instruction_name(r.ins) << " "
                                << mma::kind_name(r.kind));
    mma::ProfileInfo info;
    REQUIRE(mma::profile_info(r.arch, r.ins, r.kind, info));
    CHECK(info.block == r.block);
    CHECK(info.frac_bits == r.frac_bits);
    CHECK(info.e8m13 == r.e8m13);
  }
  // What does not exist is refused, naming what does.
  CHECK_FALSE(mma::supported(A::sm80, K::f8));
  CHECK(mma::profile_error(A::sm80, K::f8).find("sm89, sm90, sm100") != std::string::npos);
  CHECK_FALSE(mma::supported(A::sm90, K::mxf8));
  CHECK(mma::profile_error(A::sm90, K::mxf8).find("profiles that do: sm100") != std::string::npos);
  CHECK_FALSE(mma::supported(A::sm80, I::wgmma, K::f16));
  CHECK_FALSE(mma::supported(A::sm90, I::tcgen05, K::f16));
}
