#include "metrics/ulp.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "numerics/encode.hpp"
#include "numerics/round.hpp"

namespace attndev::metrics {

namespace {

// The encoding of x in `format` as sign and magnitude: magnitudes of one sign are ordered like
// the values (IEEE layouts are sign-magnitude, the exponent above the fraction), so the ulp
// distance is a difference of magnitudes, or their sum across zero.
struct Ordinal {
  bool negative = false;
  std::uint64_t magnitude = 0;
};

Ordinal ordinal(double x, numerics::Format format) {
  const numerics::FormatTraits t = numerics::traits(format);
  const double r = numerics::round_to(format, x, numerics::default_overflow(format));
  std::uint64_t bits = numerics::encode_exact(format, r);
  const int storage = t.storage_bits;
  Ordinal o;
  o.negative = ((bits >> (storage - 1)) & 1u) != 0;
  o.magnitude = bits & ((storage == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << storage) - 1) >>
                        1);  // drop the sign bit
  // tf32 lives in an fp32 container with 13 fraction bits always zero: count its own steps.
  if (format == numerics::Format::tf32) o.magnitude >>= 13;
  return o;
}

int bucket_of(std::uint64_t ulps) {
  if (ulps <= 2) return static_cast<int>(ulps);
  if (ulps <= 4) return 3;
  if (ulps <= 8) return 4;
  if (ulps <= 16) return 5;
  if (ulps <= 64) return 6;
  if (ulps <= 256) return 7;
  return 8;
}

}  // namespace

std::uint64_t ulp_distance(double a, double b, numerics::Format format) {
  const Ordinal oa = ordinal(a, format), ob = ordinal(b, format);
  if (oa.negative == ob.negative)
    return oa.magnitude > ob.magnitude ? oa.magnitude - ob.magnitude : ob.magnitude - oa.magnitude;
  const std::uint64_t sum = oa.magnitude + ob.magnitude;
  return sum < oa.magnitude ? std::numeric_limits<std::uint64_t>::max() : sum;  // fp64 extremes
}

std::string UlpComparison::histogram_text() const {
  std::string out;
  const auto add = [&](const char* name, std::int64_t n) {
    if (!out.empty()) out += ' ';
    out += name;
    out += ':';
    out += std::to_string(n);
  };
  for (int i = 0; i < kUlpBuckets; ++i)
    if (histogram[static_cast<std::size_t>(i)] != 0)
      add(kUlpBucketNames[i], histogram[static_cast<std::size_t>(i)]);
  if (not_comparable) add("n/a", not_comparable);
  return out;
}

UlpComparison compare_ulps(std::span<const double> x, std::span<const double> ref,
                           numerics::Format format) {
  if (x.size() != ref.size())
    throw std::invalid_argument("metrics::compare_ulps: sizes differ (" + std::to_string(x.size()) +
                                " vs reference " + std::to_string(ref.size()) + ")");
  UlpComparison c;
  c.count = static_cast<std::int64_t>(x.size());
  double sum = 0;  // of integers below 2^53 each; exact enough for a mean
  std::int64_t compared = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double a = x[i], b = ref[i];
    const bool same = std::isnan(a) ? std::isnan(b) && numerics::bits_of(a) == numerics::bits_of(b)
                                    : a == b && std::signbit(a) == std::signbit(b);
    if (same) ++c.identical;
    if (std::isnan(a) || std::isnan(b) || ((std::isinf(a) || std::isinf(b)) && a != b)) {
      ++c.not_comparable;
      continue;
    }
    const std::uint64_t d = ulp_distance(a, b, format);
    const auto di = static_cast<std::int64_t>(
        std::min<std::uint64_t>(d, std::numeric_limits<std::int64_t>::max()));
    c.max_ulp = std::max(c.max_ulp, di);
    sum += static_cast<double>(di);
    ++compared;
    ++c.histogram[static_cast<std::size_t>(bucket_of(d))];
  }
  c.identical_fraction = c.count ? static_cast<double>(c.identical) / c.count : 1.0;
  c.mean_ulp = compared ? sum / compared : 0.0;
  return c;
}

}  // namespace attndev::metrics
