// round_to against the independent oracle on >= 1e7 random floats and >= 1e7 random doubles,
// every format, every overflow rule that format uses.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "numerics/oracle.hpp"
#include "numerics/round.hpp"
#include "test_scale.hpp"

namespace nt = attndev::numerics::testing;
using attndev::numerics::Format;
using attndev::numerics::kAllFormats;
using attndev::numerics::Overflow;
using attndev::numerics::round_to;
using attndev::numerics::traits;

namespace {

// 10^7 in the Release build; the smoke scale of the sanitizer and clang builds (test_scale.hpp).
constexpr int kCount = static_cast<int>(attndev::test::scaled_count(10'000'000));

struct Mode {
  Format format;
  Overflow overflow;
};

std::vector<Mode> all_modes() {
  std::vector<Mode> modes;
  for (Format f : kAllFormats) {
    modes.push_back({f, attndev::numerics::default_overflow(f)});
    modes.push_back({f, Overflow::saturate});
  }
  modes.push_back({Format::fp16, Overflow::to_nan});
  return modes;
}

// Checks one input against the oracle in every mode; returns the number of mismatches and prints
// the first few.
int check_all_modes(double x, const std::vector<Mode>& modes, long long& compared) {
  int bad = 0;
  for (const Mode& m : modes) {
    const double got = round_to(m.format, x, m.overflow);
    const double want = nt::oracle_round(m.format, x, m.overflow);
    ++compared;
    if (!nt::same_value(got, want)) {
      if (++bad <= 5) {
        UNSCOPED_INFO(traits(m.format).name << " overflow=" << static_cast<int>(m.overflow)
                                            << " x=" << nt::hex(x) << " got=" << nt::hex(got)
                                            << " want=" << nt::hex(want));
      }
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("round_to matches the oracle on 1e7 random floats", "[round][random]") {
  std::mt19937_64 rng(nt::test_seed("random floats", 0x5eed0001));
  const std::vector<Mode> modes = all_modes();
  long long compared = 0;
  int bad = 0;
  for (int i = 0; i < kCount; ++i) {
    float x;
    if (i % 2 == 0) {
      // Any bit pattern: log-uniform over the whole float range, NaN and inf included.
      x = attndev::numerics::float_from_bits(static_cast<std::uint32_t>(rng()));
    } else {
      // Concentrated where fp16 and fp8 have their subnormals, normals and overflow.
      x = static_cast<float>(nt::log_uniform_double(rng, -28, 20));
    }
    bad += check_all_modes(static_cast<double>(x), modes, compared);
    // The float overload must agree with the double one (it has its own fast paths).
    for (Format f : kAllFormats) {
      const float got = round_to(f, x);
      const double want = nt::oracle_round(f, x, attndev::numerics::default_overflow(f));
      ++compared;
      if (!nt::same_value(got, static_cast<float>(want)) && ++bad <= 5) {
        UNSCOPED_INFO("float overload " << traits(f).name << " x=" << nt::hex(x));
      }
    }
  }
  INFO("compared " << compared);
  CHECK(bad == 0);
  REQUIRE(compared >= 10LL * kCount);
}

TEST_CASE("round_to matches the oracle on 1e7 random doubles", "[round][random]") {
  std::mt19937_64 rng(nt::test_seed("random doubles", 0x5eed0002));
  const std::vector<Mode> modes = all_modes();
  long long compared = 0;
  int bad = 0;
  for (int i = 0; i < kCount; ++i) {
    double x;
    switch (i % 4) {
      case 0:
        x = nt::log_uniform_double(rng, -1074, 1023);
        break;  // whole double range
      case 1:
        x = nt::log_uniform_double(rng, -160, 140);
        break;  // fp32/bf16/tf32 range
      case 2:
        x = nt::log_uniform_double(rng, -28, 20);
        break;  // fp16/fp8 range
      default: {
        // A value of the format with a tiny perturbation: the inputs where double-rounding
        // through float or a lost sticky bit would show.
        const double base = static_cast<float>(nt::log_uniform_double(rng, -28, 20));
        x = base * (1.0 + std::ldexp(static_cast<double>(rng() % 64) - 32.0, -50));
        break;
      }
    }
    bad += check_all_modes(x, modes, compared);
  }
  INFO("compared " << compared);
  CHECK(bad == 0);
  REQUIRE(compared >= 10LL * kCount);
}
