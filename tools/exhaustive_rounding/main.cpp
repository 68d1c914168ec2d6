// Exhaustive checks of the fast path's two rounding shortcuts (docs/numerics.md, "Fast paths"):
//
//   1. numerics::FloatRounder (a float rounded to a format given at run time, branch-free) equals
//      numerics::round_to(f, double(x), overflow) for all 2^32 float bit patterns, for every
//      format and overflow rule a policy uses.
//   2. For every pair of finite bf16 values and every pair of finite fp16 values (a >= 0, b of
//      either sign; rounding is symmetric, so this covers every sign combination), the float sum
//      rounded to the format equals the exact sum rounded once (numerics::fixed::add_in): the
//      innocuous double rounding that NativeArith::sum_into relies on.
//
//   attndev_exhaustive_rounding        (prints each check; exit 1 on any mismatch)
#include <cstdint>
#include <cstdio>
#include <vector>

#include "numerics/float_rounder.hpp"
#include "numerics/round.hpp"
#include "numerics/static_arith.hpp"

namespace nx = attndev::numerics;

namespace {

bool same(float a, float b) {
  return nx::bits_of(a) == nx::bits_of(b) || (a != a && b != b);
}

unsigned long long check_rounder(nx::Format f, nx::Overflow o) {
  const nx::FloatRounder r(f, o);
  unsigned long long bad = 0;
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; ++u) {
    const float x = nx::float_from_bits(static_cast<std::uint32_t>(u));
    const float want = static_cast<float>(nx::round_to(f, static_cast<double>(x), o));
    if (!same(r(x), want) && bad++ < 3)
      std::printf("  %s: x = %a gives %a, round_to gives %a\n", nx::format_name(f), x, r(x), want);
  }
  return bad;
}

// Rounded as NativeArith::sum_into rounds: round.hpp's float functions (round_to_bf16/fp16).
template <nx::Format F>
unsigned long long check_sum() {
  const auto r = [](float x) { return nx::round_to(F, x); };
  std::vector<float> pos, neg;  // every finite non-negative value of F, and their negatives
  for (std::uint64_t u = 0; u < 0x7F800000u; ++u) {
    const float x = nx::float_from_bits(static_cast<std::uint32_t>(u));
    if (r(x) == x && x == x && x != INFINITY) {
      pos.push_back(x);
      neg.push_back(-x);
    }
  }
  unsigned long long bad = 0;
  for (float a : pos)
    for (const std::vector<float>* bs : {&pos, &neg}) {
      const float* b = bs->data();
      const int n = static_cast<int>(bs->size());
      int local = 0;
      for (int j = 0; j < n; ++j)
        local += nx::bits_of(r(a + b[j])) !=
                 nx::bits_of(static_cast<float>(nx::fixed::add_in<F>(a, b[j])));
      bad += static_cast<unsigned long long>(local);
    }
  std::printf("%s: %zu x %zu pairs, fl32(a + b) rounded vs exact add_in: %llu mismatches\n",
              nx::format_name(F), pos.size(), 2 * pos.size(), bad);
  return bad;
}

}  // namespace

int main() {
  struct Case {
    nx::Format f;
    nx::Overflow o;
  };
  const Case cases[] = {
      {nx::Format::fp32, nx::Overflow::to_inf},     {nx::Format::tf32, nx::Overflow::to_inf},
      {nx::Format::bf16, nx::Overflow::to_inf},     {nx::Format::fp16, nx::Overflow::to_inf},
      {nx::Format::fp8_e5m2, nx::Overflow::to_inf}, {nx::Format::fp8_e4m3, nx::Overflow::saturate},
      {nx::Format::fp8_e4m3, nx::Overflow::to_nan}};
  unsigned long long bad = 0;
  for (const Case& c : cases) {
    const unsigned long long b = check_rounder(c.f, c.o);
    std::printf("FloatRounder %s (overflow rule %d): %llu mismatches over all 2^32 floats\n",
                nx::format_name(c.f), static_cast<int>(c.o), b);
    std::fflush(stdout);
    bad += b;
  }
  bad += check_sum<nx::Format::bf16>();
  bad += check_sum<nx::Format::fp16>();
  std::printf(bad == 0 ? "all exhaustive checks passed\n" : "FAILED: %llu mismatches\n", bad);
  return bad == 0 ? 0 : 1;
}
