// Element-level agreement of two outputs: how many elements are bit-identical, and how far apart
// the others are in units in the last place (ulps) of the output format.
//
// This is how one tells "implements the same arithmetic" from "is about as accurate": two kernels
// with the same mean deviation from the golden can share no element, and a kernel that rounds
// exactly like another agrees bit for bit almost everywhere (a different summation order moves a
// few elements by an ulp or two).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "numerics/format.hpp"

namespace attndev::metrics {

// Buckets of the ulp histogram: 0, 1, 2, 3-4, 5-8, 9-16, 17-64, 65-256, >256.
inline constexpr int kUlpBuckets = 9;
inline constexpr const char* kUlpBucketNames[kUlpBuckets] = {
    "0", "1", "2", "3-4", "5-8", "9-16", "17-64", "65-256", ">256"};

struct UlpComparison {
  std::int64_t count = 0;
  std::int64_t identical = 0;     // elements with the same double value (NaN: the same bits)
  double identical_fraction = 1;  // identical / count; 1 when count == 0
  // Over comparable elements (both finite, or the same infinity):
  std::int64_t max_ulp = 0;
  double mean_ulp = 0;
  std::array<std::int64_t, kUlpBuckets> histogram{};
  // NaN on either side, or an infinity against a different value: no distance.
  std::int64_t not_comparable = 0;

  // "0:812 1:190 2:15 3-4:3" (buckets with elements only), plus " n/a:2" for not_comparable.
  std::string histogram_text() const;
};

// Distance between a and b in ulps of `format`: the number of representable values of `format`
// one steps over from a to b (-0 and +0 are one value). Values not representable in `format` are
// rounded to it first (round-to-nearest-even). a and b must not be NaN.
std::uint64_t ulp_distance(double a, double b, numerics::Format format);

// x against ref, element by element (sizes must match: std::invalid_argument otherwise).
UlpComparison compare_ulps(std::span<const double> x, std::span<const double> ref,
                           numerics::Format format);

}  // namespace attndev::metrics
