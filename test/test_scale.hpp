// Sizes of the randomized tests: the Release build runs the full count, the sanitizer and
// second-compiler builds a smoke-sized one (ATTNDEV_TEST_SCALE in test/CMakeLists.txt says why).
#pragma once

#include <cstddef>

#ifndef ATTNDEV_TEST_SMOKE
#define ATTNDEV_TEST_SMOKE 0
#endif

namespace attndev::test {

inline constexpr bool kSmokeScale = ATTNDEV_TEST_SMOKE != 0;

// `full` cases in the Release build, `full / 100` (at least `floor`) in a smoke build.
constexpr std::size_t scaled_count(std::size_t full, std::size_t floor = 100) {
  if (!kSmokeScale) return full;
  return full / 100 > floor ? full / 100 : floor;
}

}  // namespace attndev::test
