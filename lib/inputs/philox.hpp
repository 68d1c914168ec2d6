// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011): a counter-based generator. The output block is a pure function of (counter, key), so
// any element of any tensor can be generated alone, in any order, on any thread or machine.
//
// Written from the published description; checked against Random123's known-answer vectors in
// test/inputs/test_random_inputs.cpp. constexpr and free of library calls so that a device port can
// include it unchanged.
#pragma once

#include <array>
#include <cstdint>

namespace attndev::inputs {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;  // multiplier of counter word 0
inline constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;  // multiplier of counter word 2
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // Weyl key bump: golden ratio
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // Weyl key bump: sqrt(3) - 1
inline constexpr int kPhiloxRounds = 10;

constexpr PhiloxCounter philox4x32_round(const PhiloxCounter& c, const PhiloxKey& k) {
  const std::uint64_t p0 = std::uint64_t{kPhiloxM0} * c[0];
  const std::uint64_t p1 = std::uint64_t{kPhiloxM1} * c[2];
  const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
  const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

// Ten rounds; the key is bumped between rounds (nine bumps), so round r uses key + r*W.
constexpr PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    counter = philox4x32_round(counter, key);
  }
  return counter;
}

}  // namespace attndev::inputs
