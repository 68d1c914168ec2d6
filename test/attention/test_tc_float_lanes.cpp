// The tensor-core model's float lanes (attention/tc_float_lanes.hpp, the fast path's GEMMs on a
// profile) against the scalar model (numerics/mma.hpp dot) and the double lanes, on every
// profile: random operands in the float range, and the adversarial ones that leave it (tiny and
// huge exponents, a C that is not an fp32 value, int32 partial sums that overflow, results that
// overflow to inf), with k from 0 over several blocks and 1 to 5 groups of 16 lanes, for an fp32
// and an fp16 D. A wrong float form fails here: a term rounded instead of truncated, a partial
// sum that wraps, the range test off by one (E = F - 126 or 127 reaches the float path), an fp32
// D rounded to nearest, an fp16 D truncated or its E started at the fp32 floor.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "attention/tc_float_lanes.hpp"
#include "numerics/mma.hpp"
#include "numerics/round.hpp"
#include "test_scale.hpp"

namespace {

namespace mma = attndev::numerics::mma;
namespace nx = attndev::numerics;
namespace lanes = attndev::attention::detail::tc_lanes;

// An operand format of a kind (tf32 reads fp32 values), the second one where it has two.
nx::Format format_of(mma::Kind kind, bool second) {
  switch (kind) {
    case mma::Kind::f16:
      return second ? nx::Format::fp16 : nx::Format::bf16;
    case mma::Kind::tf32:
      return nx::Format::fp32;
    default:
      return second ? nx::Format::fp8_e5m2 : nx::Format::fp8_e4m3;
  }
}

enum class Draw { normal, wide, tiny, aligned_max };

struct Case {
  int k = 0, groups = 1;
  std::vector<double> a, b, c;  // (k), (k, 16 groups), (16 groups)
};

// A case of format f. normal: N(0, 1) values with zeros and cancellation; wide: exponents over
// the format's whole range and beyond fp32's float range for 8-bit ones' products; tiny: every
// product below 2^(F - 125), so E leaves the float range; aligned_max: every product near 4 2^E
// with one sign, so that sixteen terms of F = 25 overflow an int32 sum.
Case draw(std::mt19937_64& rng, nx::Format f, Draw how, bool c_not_fp32) {
  Case cs;
  cs.k = static_cast<int>(rng() % 70);
  cs.groups = 1 + static_cast<int>(rng() % 5);
  const int lanes_n = 16 * cs.groups;
  std::normal_distribution<double> nd(0.0, 1.0);
  const int emin = nx::traits(f).min_exponent, emax = nx::traits(f).max_exponent;
  std::uniform_int_distribution<int> exp_any(emin - 3, emax);
  auto value = [&](bool operand) {
    if (rng() % 11 == 0) return 0.0;
    double x = 0;
    switch (how) {
      case Draw::normal:
        x = nd(rng);
        break;
      case Draw::wide:
        x = std::ldexp(1.0 + (rng() % 1024) / 1024.0, exp_any(rng));
        break;
      case Draw::tiny:
        x = std::ldexp(1.0 + (rng() % 64) / 64.0, operand ? emin : -140);
        break;
      case Draw::aligned_max:
        x = 1.9990234375;
        break;
    }
    if (how != Draw::aligned_max && (rng() & 1)) x = -x;
    return operand ? nx::round_to(f, x, nx::Overflow::saturate) : x;
  };
  cs.a.resize(static_cast<std::size_t>(cs.k));
  cs.b.resize(static_cast<std::size_t>(cs.k) * lanes_n);
  cs.c.resize(static_cast<std::size_t>(lanes_n));
  for (double& x : cs.a) x = value(true);
  for (double& x : cs.b) x = value(true);
  for (double& x : cs.c) {
    x = static_cast<double>(static_cast<float>(value(false)));
    if (c_not_fp32 && rng() % 4 == 0) x += std::ldexp(x, -30);  // a double C (fast-f64)
  }
  return cs;
}

// kOut: D's type. An fp16 D's C is an fp16 value (SageAttention 1's and 2++'s P V accumulator).
template <class P, mma::Output kOut>
void check_profile(std::mt19937_64& rng, mma::Kind kind, std::size_t trials, int& compared,
                   int& in_float_range) {
  const bool tf32 = kind == mma::Kind::tf32;
  for (std::size_t trial = 0; trial < trials; ++trial) {
    const Draw how = static_cast<Draw>(trial % 4);
    const nx::Format f = format_of(kind, (trial & 4) != 0);
    const mma::Operands op = mma::operands(f, f);
    Case cs = draw(rng, f, how, trial % 7 == 0);
    if (kOut == mma::Output::fp16)
      for (double& x : cs.c) x = nx::round_to(nx::Format::fp16, x, nx::Overflow::saturate);
    const int n = 16 * cs.groups;
    std::vector<float> af(cs.a.size()), bf(cs.b.size());
    std::vector<lanes::Expo> ea(af.size()), eb(bf.size());
    REQUIRE(lanes::operands_f(cs.a.data(), cs.k, op.emin_a, tf32, af.data(), ea.data()) == 0);
    REQUIRE(lanes::operands_f(cs.b.data(), static_cast<std::ptrdiff_t>(cs.b.size()), op.emin_b,
                              tf32, bf.data(), eb.data()) == 0);
    std::vector<double> acc = cs.c;  // (n)
    lanes::lane_chain_f<P, kOut>(af.data(), ea.data(), bf.data(), eb.data(), n, cs.k, cs.groups,
                                 acc.data());
    for (int l = 0; l < n; ++l) {
      // k = 0: b is empty (no pointer to offset) and D is C.
      const double want = cs.k == 0 ? cs.c[static_cast<std::size_t>(l)]
                                    : mma::dot<P>(op, cs.a.data(), 1, cs.b.data() + l, n, cs.k,
                                                  cs.c[static_cast<std::size_t>(l)], kOut);
      const double got = acc[static_cast<std::size_t>(l)];
      INFO(mma::arch_name(P::kArch)
           << " kind " << static_cast<int>(kind) << " fp16 D " << (kOut == mma::Output::fp16)
           << " draw " << static_cast<int>(how) << " k " << cs.k << " lane " << l << " want "
           << want << " got " << got);
      if (std::isfinite(want)) {
        REQUIRE(nx::bits_of(got) == nx::bits_of(want));
        in_float_range += how == Draw::normal;
      } else {
        REQUIRE(!std::isfinite(got));  // the caller recomputes it with the scalar model
      }
      ++compared;
    }
  }
}

}  // namespace

TEST_CASE("tensor-core float lanes equal the scalar model on every profile, fp32 and fp16 D",
          "[tc_gemm][mma][lanes]") {
  std::mt19937_64 rng(3507);
  const std::size_t trials = attndev::test::scaled_count(3000, 40);
  int compared = 0, normal = 0, profiles = 0;
  for (mma::Arch arch : mma::kAllArchs)
    for (mma::Instruction ins : mma::kAllInstructions)
      for (mma::Kind kind : {mma::Kind::f16, mma::Kind::tf32, mma::Kind::f8})
        profiles += mma::with_profile(arch, ins, kind, [&](auto profile) {
          using P = decltype(profile);
          check_profile<P, mma::Output::fp32>(rng, kind, trials, compared, normal);
          check_profile<P, mma::Output::fp16>(rng, kind, trials / 2, compared, normal);
        });
  CHECK(profiles >= 10);
  CHECK(normal > 1000);
  CHECK(compared > normal);
}

TEST_CASE("tensor-core float lanes: sixteen aligned terms of F = 25 leave int32 and stay exact",
          "[tc_gemm][mma][lanes]") {
  // Every product 1.999^2 2^0 with C = 0: each term trunc(3.996 2^25) ~ 2^27, sixteen of them
  // ~ 2^31, past int32's range: the block must go to the double form, and D equal the model's.
  using P = mma::Sm90F16;
  const double x = 1.9990234375;  // bf16
  std::vector<double> a(16, x), b(16 * 16, x);
  std::vector<float> af(16), bf(b.size());
  std::vector<lanes::Expo> ea(16), eb(b.size());
  const mma::Operands op = mma::operands(nx::Format::bf16, nx::Format::bf16);
  lanes::operands_f(a.data(), 16, op.emin_a, false, af.data(), ea.data());
  lanes::operands_f(b.data(), 256, op.emin_b, false, bf.data(), eb.data());
  std::vector<double> acc(16, 0.0);
  lanes::lane_chain_f<P>(af.data(), ea.data(), bf.data(), eb.data(), 16, 16, 1, acc.data());
  const double want = mma::dot<P>(op, a.data(), 1, b.data(), 16, 16, 0.0, mma::Output::fp32);
  CHECK(want > 63.0);  // sixteen products of about 4
  for (double got : acc) CHECK(nx::bits_of(got) == nx::bits_of(want));
}
