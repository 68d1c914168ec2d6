// numerics::fixed (the branch-free, compile-time-format operations of the SIMD fast path) must
// give the same bits as arith.hpp's add_in/sub_in/mul_in/div_in/fma_in and round.hpp's round_to
// for every input: random operands of the format, of fp32 and of fp64 (where the sticky term
// decides ties), exact ties built on purpose, signed zeros, subnormals, overflow, inf and NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "numerics/arith.hpp"
#include "numerics/static_arith.hpp"

using namespace attndev::numerics;

namespace {

bool same_bits(double a, double b) {
  return bits_of(a) == bits_of(b) || (a != a && b != b);  // any NaN matches any NaN
}

// Values that stress the rounding: format values, their midpoints and neighbours, zeros of both
// signs, subnormals of the format and of fp32, the overflow threshold, inf and NaN.
template <Format F>
std::vector<double> special_values() {
  constexpr FormatTraits t = traits(F);
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           1.0 + t.epsilon() / 2,
                           1.0 + t.epsilon() / 2 + 0x1p-40,
                           1.0 + 1.5 * t.epsilon(),
                           t.min_normal(),
                           t.min_subnormal(),
                           t.min_subnormal() / 2,
                           1.5 * t.min_subnormal(),
                           t.max_finite,
                           t.max_finite * (1.0 + t.epsilon() / 4),
                           t.max_finite * (1.0 + t.epsilon() / 2),
                           0x1p-149,
                           0x1p-126,
                           3.4028234663852886e38,
                           INFINITY,
                           -INFINITY,
                           NAN};
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

template <Format F>
double random_operand(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> kind(0, 2), expo(-30, 30);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  double x = std::ldexp(mant(rng), expo(rng)) * ((rng() & 1) ? -1.0 : 1.0);
  switch (kind(rng)) {
    case 0:
      return round_to(F, x);
    case 1:
      return static_cast<double>(static_cast<float>(x));
    default:
      return x;
  }
}

template <Format F>
void check_format() {
  INFO(traits(F).name);
  std::vector<double> xs = special_values<F>();
  std::mt19937_64 rng(0x5eed57a7);
  for (int i = 0; i < 300; ++i) xs.push_back(random_operand<F>(rng));
  // Ties: a + b landing exactly on a midpoint of F, pushed off it by a tiny third operand.
  for (int i = 0; i < 200; ++i) {
    const double a = round_to(F, random_operand<F>(rng));
    xs.push_back(a);
    // ilogb(0) is INT_MIN (found by UBSan: the subtraction overflowed): half an ulp of a
    // non-zero finite a only.
    if (a != 0 && std::isfinite(a))
      xs.push_back(std::ldexp(1.0, std::ilogb(a) - traits(F).fraction_bits - 1));
  }
  // Counted, with the first mismatch of each operation kept: a CHECK per pair would be millions
  // of assertions.
  std::size_t compared = 0, mismatches = 0;
  std::string first;
  auto expect = [&](const char* op, double got, double want, double a, double b, double c) {
    ++compared;
    if (same_bits(got, want)) return;
    if (mismatches++ == 0) {
      std::ostringstream os;
      os.precision(17);
      os << op << "(" << a << ", " << b << ", " << c << "): " << got << " != " << want;
      first = os.str();
    }
  };
  for (double x : xs) {
    expect("round_to", fixed::round_to<F>(x), round_to(F, x), x, 0, 0);
    for (double y : xs) {
      expect("add_in", fixed::add_in<F>(x, y), add_in(F, x, y), x, y, 0);
      expect("sub_in", fixed::sub_in<F>(x, y), sub_in(F, x, y), x, y, 0);
      expect("mul_in", fixed::mul_in<F>(x, y), mul_in(F, x, y), x, y, 0);
      expect("div_in", fixed::div_in<F>(x, y), div_in(F, x, y), x, y, 0);
    }
  }
  // fma on a random sample of triples (all of them would be 10^8), and products exactly
  // cancelled by c.
  std::uniform_int_distribution<std::size_t> pick(0, xs.size() - 1);
  for (int i = 0; i < 200000; ++i) {
    const double a = xs[pick(rng)], b = xs[pick(rng)], c = xs[pick(rng)];
    expect("fma_in", fixed::fma_in<F>(a, b, c), fma_in(F, a, b, c), a, b, c);
    expect("fma_in", fixed::fma_in<F>(a, b, -a * b), fma_in(F, a, b, -a * b), a, b, -a * b);
  }
  INFO(first);
  CHECK(mismatches == 0);
  CHECK(compared > 2000000);
}

}  // namespace

TEST_CASE("static_arith matches arith bit for bit in bf16, fp16 and tf32", "[arith]") {
  check_format<Format::bf16>();
  check_format<Format::fp16>();
  check_format<Format::tf32>();
}
