// The quantized recipes' fast form (attention/fast_quant.cpp) against their reference form
// (quant_attention.cpp, Options::Path::generic): every recipe on every profile that runs it, on
// random shapes, tiles, masks and inputs, bit for bit in O, lse and every stage report; inputs
// with inf and NaN, which take the reference's scalar functions inside the fast form; and the
// lane kernels the fast form adds (quant_lanes.hpp) against the scalar models they batch.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "attention/quant_attention.hpp"
#include "attention/quant_lanes.hpp"
#include "helpers.hpp"
#include "numerics/float_rounder.hpp"
#include "numerics/mma.hpp"
#include "numerics/quant.hpp"
#include "numerics/round.hpp"
#include "test_scale.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

using nx::mma::Arch;

// Bits of o and lse, and every field of every stage report (rel_rmse by its bits).
std::size_t quant_report_differences(const Output& a, const Output& b) {
  std::size_t n = a.quant.size() == b.quant.size() ? 0 : 1;
  for (std::size_t i = 0; i < std::min(a.quant.size(), b.quant.size()); ++i) {
    const QuantStageReport &x = a.quant[i], &y = b.quant[i];
    n += x.stage != y.stage || x.elements != y.elements || x.saturated != y.saturated ||
         x.groups != y.groups || x.zero_scales != y.zero_scales ||
         x.nonfinite_scales != y.nonfinite_scales || !same_bits(x.rel_rmse, y.rel_rmse);
  }
  return n;
}

// Elements whose bits differ, a NaN matching any NaN (its payload is not part of the model).
std::size_t nan_aware_differences(const Output& a, const Output& b) {
  auto same = [](double x, double y) { return same_bits(x, y) || (x != x && y != y); };
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.o.data.size(); ++i) n += !same(a.o.data[i], b.o.data[i]);
  for (std::size_t i = 0; i < a.lse.size(); ++i) n += !same(a.lse[i], b.lse[i]);
  return n;
}

nx::PrecisionPolicy fast_quant_policy(Arch arch) {
  nx::PrecisionPolicy p = preset("kernel-fp16");
  p.mma = arch;
  return p;
}

struct FastQuantCase {
  Shape shape;
  Options options;
  bool outliers = false;
  std::uint64_t seed = 0;
};

// A random shape and tiling that the recipe can run on the profile, or none after 50 draws.
bool draw_fast_quant_case(std::mt19937_64& rng, Algorithm a, const nx::PrecisionPolicy& pol,
                          FastQuantCase& c) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() +
             std::uniform_int_distribution<int>(0, static_cast<int>(v.size()) - 1)(rng));
  };
  for (int tries = 0; tries < 50; ++tries) {
    c.shape = Shape{pick({1, 2}), pick({1, 2}), std::uniform_int_distribution<int>(1, 150)(rng),
                    std::uniform_int_distribution<int>(1, 150)(rng), pick({32, 64, 128})};
    c.options = Options{};
    c.options.causal = pick({0, 1}) == 1;
    c.options.block_r = pick({16, 32, 64});
    c.options.block_c = pick({16, 32, 64, 128});
    c.options.threads = pick({1, 2});
    c.outliers = pick({0, 1}) == 1;
    c.seed = rng();
    if (unsupported_reason(a, pol, c.shape, c.options.block_r, c.options.block_c).empty())
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("quantized recipes: the fast form equals the reference form bit for bit",
          "[quant][fast]") {
  std::mt19937_64 rng(20261206);
  const std::size_t per_pair = attndev::test::scaled_count(6, 1);
  int compared = 0;
  for (Algorithm a : kQuantAlgorithms)
    for (Arch arch : {Arch::none, Arch::sm89, Arch::sm90, Arch::sm100}) {
      const nx::PrecisionPolicy pol = fast_quant_policy(arch);
      for (std::size_t n = 0; n < per_pair; ++n) {
        FastQuantCase c;
        if (!draw_fast_quant_case(rng, a, pol, c))
          break;  // the recipe does not run on this profile
        const Inputs in = c.outliers ? outlier_inputs(c.shape, c.seed, nx::Format::fp16)
                                     : random_inputs(c.shape, c.seed, nx::Format::fp16);
        Options generic = c.options;
        generic.path = Options::Path::generic;
        const Output fast = run(a, pol, in, c.options);
        const Output ref = run(a, pol, in, generic);
        INFO(algorithm_name(a) << " on " << nx::mma::arch_name(arch) << ", "
                               << describe(c.shape, c.options) << ", seed " << c.seed
                               << (c.outliers ? ", outliers" : ""));
        CHECK(bit_differences(fast, ref) == 0);
        CHECK(quant_report_differences(fast, ref) == 0);
        ++compared;
      }
    }
  // 10 recipes; sage2-4b runs on none / sm89, sage3 and mxfp8 on none / sm100.
  CHECK(compared >= static_cast<int>(per_pair) * 30);
}

TEST_CASE("quantized recipes: inf and NaN inputs take the reference's path in the fast form",
          "[quant][fast]") {
  const Shape s{1, 1, 70, 90, 64};
  int compared = 0;
  for (Algorithm a : kQuantAlgorithms)
    for (Arch arch : {Arch::none, Arch::sm90, Arch::sm100}) {
      const nx::PrecisionPolicy pol = fast_quant_policy(arch);
      if (!unsupported_reason(a, pol, s, 64, 64).empty()) continue;
      for (int which = 0; which < 3; ++which) {
        Inputs in = random_inputs(s, 7 + which, nx::Format::fp16);
        // An inf in V (fp16 V stays inf; e4m3 V saturates), a NaN in K, a huge Q row (scores
        // overflow in the recipes that scale after the dot).
        if (which == 0) in.v.at(0, 0, 17, 5) = INFINITY;
        if (which == 1) in.k.at(0, 0, 33, 9) = NAN;
        if (which == 2)
          for (int t = 0; t < 64; ++t) in.q.at(0, 0, 3, t) = 6.0e4;
        Options generic;
        generic.path = Options::Path::generic;
        const Output fast = run(a, pol, in, Options{});
        const Output ref = run(a, pol, in, generic);
        INFO(algorithm_name(a) << " on " << nx::mma::arch_name(arch) << ", case " << which);
        CHECK(nan_aware_differences(fast, ref) == 0);
        ++compared;
      }
    }
  CHECK(compared >= 60);
}

TEST_CASE("quant lanes: the fp16-D chain equals the scalar model on every profile",
          "[quant][fast][mma]") {
  namespace mma = nx::mma;
  std::mt19937_64 rng(36);
  const std::size_t trials = attndev::test::scaled_count(4000, 100);
  int compared = 0;
  for (Arch arch : {Arch::sm80, Arch::sm89, Arch::sm90, Arch::sm100})
    for (nx::Format f : {nx::Format::fp16, nx::Format::fp8_e4m3}) {
      mma::Kind kind{};
      REQUIRE(mma::kind_of(f, f, kind));
      using Chain = attndev::attention::detail::tc_lanes::LaneChain;
      Chain chain = nullptr;
      mma::with_profile(arch, mma::default_instruction(arch), kind, [&](auto profile) {
        chain =
            &attndev::attention::detail::tc_lanes::lane_chain<decltype(profile), mma::Output::fp16>;
      });
      if (!chain) continue;  // sm80 has no fp8
      const mma::DotFunction dot = mma::dot_function(arch, mma::default_instruction(arch), kind);
      const double emin = nx::traits(f).min_exponent;
      // Operands: values of f over its whole range (zeros, subnormals, the largest), so that
      // some chains overflow fp16 and some cancel to zero.
      std::uniform_real_distribution<double> mag(-12.0, f == nx::Format::fp16 ? 8.0 : 9.0);
      auto value = [&] {
        const double x = std::ldexp(1.0, static_cast<int>(mag(rng))) * (1.0 + mag(rng) / 16.0);
        const double r = nx::round_to(f, (rng() & 1) ? -x : x, nx::Overflow::saturate);
        return (rng() % 9 == 0) ? 0.0 : r;
      };
      for (std::size_t trial = 0; trial < trials / 8; ++trial) {
        const int k = 1 + static_cast<int>(rng() % 96);
        std::vector<double> a(k), ea(k), b(static_cast<std::size_t>(k) * 16), eb(b.size());
        for (int i = 0; i < k; ++i)
          attndev::attention::detail::tc_lanes::operand(value(), emin, false, a[i], ea[i]);
        for (std::size_t i = 0; i < b.size(); ++i)
          attndev::attention::detail::tc_lanes::operand(value(), emin, false, b[i], eb[i]);
        alignas(64) double lanes[16], c0[16];
        for (int l = 0; l < 16; ++l) lanes[l] = c0[l] = nx::round_to(nx::Format::fp16, value());
        chain(a.data(), ea.data(), b.data(), eb.data(), 16, k, lanes);
        for (int l = 0; l < 16; ++l) {
          const double want =
              dot(mma::operands(f, f), a.data(), 1, b.data() + l, 16, k, c0[l], mma::Output::fp16);
          if (!std::isfinite(want) && want == want) {
            CHECK(lanes[l] ==
                  want);  // inf of the right sign (the fast form redoes non-finite lanes)
          } else if (want == want) {
            INFO(mma::arch_name(arch) << " " << nx::format_name(f) << " k " << k << " lane " << l);
            CHECK(same_bits(lanes[l], want));
          }
          ++compared;
        }
      }
    }
  CHECK(compared > 1000);
}

TEST_CASE("quant lanes: kind::mxf4nvf4 lanes equal nvf4_dot", "[quant][fast][mma]") {
  std::mt19937_64 rng(4);
  const std::size_t trials = attndev::test::scaled_count(2000, 50);
  const double e2m1[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  auto element = [&] { return (rng() & 1 ? -1 : 1) * e2m1[rng() % 8]; };
  // ue4m3 values, 0 now and then (an all-zero block's scale), NaN (e4m3's 0x7F) rarely.
  auto scale = [&] {
    const std::uint64_t u = rng() % 400;
    if (u == 0) return static_cast<double>(NAN);
    if (u < 20) return 0.0;
    return nx::round_to(nx::Format::fp8_e4m3,
                        std::ldexp(1.0 + (rng() % 8) / 8.0, static_cast<int>(rng() % 17) - 9),
                        nx::Overflow::saturate);
  };
  int compared = 0;
  std::size_t lanes_drawn = 0;
  for (std::size_t trial = 0; trial < trials; ++trial) {
    const int k =
        trial % 3 == 0 ? 64 * (1 + static_cast<int>(rng() % 3)) : 1 + static_cast<int>(rng() % 200);
    const int groups = (k + 15) / 16;
    const int lane_groups = 1 + static_cast<int>(rng() % 5), n = 16 * lane_groups;  // lanes
    std::vector<double> a(k), b(static_cast<std::size_t>(k) * n), sa(groups),
        sb(static_cast<std::size_t>(groups) * n);
    for (double& x : a) x = element();
    for (double& x : b) x = element();
    for (double& x : sa) x = scale();
    for (double& x : sb) x = scale();
    std::vector<double> lanes(static_cast<std::size_t>(n)), c0(lanes.size());  // (n)
    for (std::size_t l = 0; l < lanes.size(); ++l)
      lanes[l] = c0[l] = trial % 2 ? 0.0
                                   : static_cast<double>(static_cast<float>(
                                         std::ldexp(element(), static_cast<int>(rng() % 40) - 20)));
    // The lanes read floats: e2m1 elements and e4m3 scales (or NaN) are exact there.
    const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()),
        saf(sa.begin(), sa.end()), sbf(sb.begin(), sb.end());
    attndev::attention::detail::quant_lanes::nvf4_lanes(af.data(), 0, bf.data(), n, &k, 1,
                                                        saf.data(), 0, sbf.data(), n, lane_groups,
                                                        lanes.data(), 0);
    for (int l = 0; l < n; ++l) {
      const auto ul = static_cast<std::size_t>(l);
      const double want = attndev::attention::detail::nvf4_dot(a.data(), 1, b.data() + l, n, k,
                                                               sa.data(), sb.data() + l, n, c0[ul]);
      INFO("k " << k << " lane " << l << " of " << n << " got " << lanes[ul] << " want " << want);
      if (std::isfinite(want)) {
        CHECK(same_bits(lanes[ul], want));
      } else {
        CHECK(!std::isfinite(lanes[ul]));  // the fast form redoes such a lane with nvf4_dot
      }
      ++compared;
    }
    lanes_drawn += lanes.size();
  }
  CHECK(compared == static_cast<int>(lanes_drawn));
  CHECK(lanes_drawn >= trials * 16);
}

TEST_CASE("quant lanes: P's float rounding equals round_element for the recipes' formats",
          "[quant][fast]") {
  // The fast form rounds P with FloatRounder (saturating); the reference with
  // numerics::quant::round_element(nearest_even). Every float in [0, 2^12] on a grid of 2^-14,
  // around each format's top and its subnormals, and a spread of magnitudes.
  int compared = 0;
  for (nx::Format f : {nx::Format::fp8_e4m3, nx::Format::fp16, nx::Format::fp4_e2m1}) {
    const nx::FloatRounder round(f, nx::Overflow::saturate);
    auto check = [&](float x) {
      const double want = nx::quant::round_element(f, x, nx::quant::ElemRounding::nearest_even);
      const float got = round(x);
      if (!same_bits(static_cast<double>(got), want)) {
        INFO(nx::format_name(f) << " x " << x);
        CHECK(static_cast<double>(got) == want);
      }
      ++compared;
    };
    for (int i = 0; i <= (1 << 26); i += (i < (1 << 14) ? 1 : 7)) check(std::ldexp(float(i), -14));
    for (float x = 1e-30f; x < 1e30f; x *= 1.0001f) check(x);
    for (float x : {65504.0f, 65519.0f, 65520.0f, 448.0f, 464.0f, 465.0f, 6.0f, 7.0f, 7.5f,
                    INFINITY, 0.0f, -0.0f})
      check(x);
  }
  CHECK(compared > 1000000);
}
