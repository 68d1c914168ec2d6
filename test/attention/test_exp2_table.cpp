// The measured exp2 table's host side (lib/attention/twins/exp2_table.*): the stored forms'
// arithmetic, the fitting that picks a form from measured values, the file round trip and its
// error messages. The "device" here is synthetic: a function with a known structure and a few
// planted exceptions, so the test knows what the fitting must find.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "attention/twins/exp2_table.hpp"
#include <unistd.h>

namespace attndev::attention::twins {
namespace {

using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("attndev_test_" + name + "_" + std::to_string(::getpid()) + ".table"))
      .string();
}

std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

// Index ranges covering the floats between a and b (a, b in the domain, same sign, |a| <= |b|).
std::pair<std::uint64_t, std::uint64_t> slice(float a, float b) {
  const std::uint64_t i = exp2_domain_index(numerics::bits_of(a));
  const std::uint64_t j = exp2_domain_index(numerics::bits_of(b));
  return {std::min(i, j), std::max(i, j) + 1};
}

// Slices that reach every branch of the forms: the grid's own binade, mid-range integer parts,
// tiny arguments near 0 (where quantization decides between 1 and 2^-2^-Q), the flush-to-zero
// limit, and the small positive arguments.
Ranges test_ranges() {
  return {
      slice(-0.0f, -0x1.0p-140f), slice(-0x1p-22f, -0x1.004p-22f), slice(-0.5f, -0.5004f),
      slice(-0.9998f, -1.0f),     slice(-5.5f, -5.5002f),          slice(-125.9998f, -126.0002f),
      slice(-126.5f, -126.5001f), slice(0.0f, 0x1.0p-140f),        slice(0x1p-12f, 0x1.004p-12f)};
}

// A "device" whose results depend only on x's fraction at 16 bits (floor), each grid value off
// the reference by -1, 0 or +1 ulp, with exceptions planted where hash(x) % 1021 == 0.
struct FractionDevice {
  std::vector<std::int8_t> delta = std::vector<std::int8_t>(1u << 16);
  FractionDevice() {
    for (std::uint32_t k = 0; k < delta.size(); ++k)
      delta[k] = static_cast<std::int8_t>(hash32(k) % 3) - 1;
  }
  bool planted(std::uint32_t bits) const { return hash32(bits ^ 0x5bd1e995u) % 1021 == 0; }
  float operator()(std::uint64_t index) const {
    const std::uint32_t b = exp2_domain_bits(index);
    const float x = numerics::float_from_bits(b);
    float y = exp2_fraction_predict(x, 16, Exp2Quant::floor, Exp2GridOf{16, delta.data()});
    if (planted(b)) y = numerics::float_from_bits(numerics::bits_of(y) + 3);
    return y;
  }
};

}  // namespace

TEST_CASE("exp2 table: the fraction form splits off the integer part and flushes below 2^-126",
          "[attention][twins][exp2]") {
  // A grid of 2 fraction bits whose values are exactly 2^(k/4 - 1): x = -2.75 is floor-quantized
  // to -11/4, i = -3, k = 1, y = g(1) 2^(i + 1) = 2^-0.75 2^-2.
  const auto g = [](std::uint32_t k) { return static_cast<float>(std::exp2(k / 4.0 - 1.0)); };
  CHECK(exp2_fraction_predict(-2.75f, 2, Exp2Quant::floor, g) ==
        static_cast<float>(std::exp2(-2.75)));
  CHECK(exp2_fraction_predict(-2.7f, 2, Exp2Quant::floor, g) ==
        static_cast<float>(std::exp2(-2.75)));
  CHECK(exp2_fraction_predict(-2.7f, 2, Exp2Quant::toward_zero, g) ==
        static_cast<float>(std::exp2(-2.5)));
  CHECK(exp2_fraction_predict(-2.7f, 2, Exp2Quant::nearest, g) ==
        static_cast<float>(std::exp2(-2.75)));
  CHECK(exp2_fraction_predict(-0.0f, 2, Exp2Quant::floor, g) == 1.0f);
  CHECK(exp2_fraction_predict(0.3f, 2, Exp2Quant::floor, g) == static_cast<float>(std::exp2(0.25)));
  CHECK(exp2_fraction_predict(-126.25f, 2, Exp2Quant::floor, g) == 0.0f);  // below 2^-126: +0
  CHECK(exp2_fraction_predict(-126.0f, 2, Exp2Quant::floor, g) == 0x1p-126f);
  // The domain's index order: -0 first, -127 last of the negatives, then +0 up to the float
  // below 1.
  CHECK(exp2_domain_bits(0) == 0x80000000u);
  CHECK(exp2_domain_bits(kExp2NegCount - 1) == numerics::bits_of(-127.0f));
  CHECK(exp2_domain_bits(kExp2NegCount) == 0u);
  CHECK(exp2_domain_bits(kExp2DomainSize - 1) == numerics::bits_of(std::nextafter(1.0f, 0.0f)));
}

TEST_CASE(
    "exp2 table fitting finds the planted structure, stores its exceptions and reproduces every "
    "value",
    "[attention][twins][exp2]") {
  const FractionDevice device;
  const Ranges ranges = test_ranges();
  Exp2FitOptions opt;
  opt.fraction_bits = {12, 16, 17};
  const Exp2Fit fit = fit_exp2_table(
      ranges, [&](std::uint64_t i) { return device(i); }, opt);
  REQUIRE(fit.ok);
  CHECK(fit.mismatches == 0);
  CHECK(fit.table.hypothesis() ==
        "fraction(16, floor)");  // 17 bits fits as well, in twice the bytes
  std::uint64_t planted = 0, total = 0;
  for (const auto& [b, e] : ranges)
    for (std::uint64_t i = b; i < e; ++i) {
      planted += device.planted(exp2_domain_bits(i));
      ++total;
    }
  CHECK(fit.checked == total);
  CHECK(fit.table.exc_x.size() == planted);
  CHECK(planted > 10);
  CHECK(fit.hypotheses.front().name == "fraction(16, floor)");
  CHECK(fit.hypotheses.size() == 1 + 3 * 3);

  // The file round trip, and the twins' Exp2 on it.
  Exp2Table t = fit.table;
  t.meta = {{"gpu", "synthetic"}, {"driver", "0"}, {"instruction", "ex2.approx.ftz.f32"}};
  const std::string path = temp_file("exp2_table");
  write_exp2_table(path, t);
  const auto loaded = std::make_shared<const Exp2Table>(read_exp2_table(path));
  CHECK(loaded->meta_value("gpu") == "synthetic");
  CHECK(loaded->exc_x == t.exc_x);
  const TableExp2 exp2(loaded);
  std::uint64_t bad = 0;
  for (const auto& [b, e] : ranges)
    for (std::uint64_t i = b; i < e; ++i)
      bad += numerics::bits_of(exp2(numerics::float_from_bits(exp2_domain_bits(i)))) !=
             numerics::bits_of(device(i));
  CHECK(bad == 0);
  CHECK(exp2(-200.0f) == 0.0f);  // below the measured domain: flushed
  CHECK(exp2(-INFINITY) == 0.0f);
  CHECK(std::isnan(exp2(NAN)));
  std::remove(path.c_str());
}

TEST_CASE(
    "exp2 table fitting falls back to the reference with exceptions, and refuses a form over "
    "budget",
    "[attention][twins][exp2]") {
  // A device equal to the reference except on planted values: no fraction table is needed.
  const auto device = [](std::uint64_t i) {
    const std::uint32_t b = exp2_domain_bits(i);
    const float y = exp2_reference(numerics::float_from_bits(b));
    return hash32(b) % 997 == 0 ? numerics::float_from_bits(numerics::bits_of(y) - 1) : y;
  };
  Exp2FitOptions opt;
  opt.fraction_bits = {16};
  const Exp2Fit fit = fit_exp2_table(test_ranges(), device, opt);
  REQUIRE(fit.ok);
  CHECK(fit.table.hypothesis() == "reference");
  CHECK(fit.table.delta.empty());
  CHECK(!fit.table.exc_x.empty());
  opt.max_bytes = 8 * (fit.table.exc_x.size() - 1);
  const Exp2Fit small = fit_exp2_table(test_ranges(), device, opt);
  CHECK_FALSE(small.ok);
  CHECK_THAT(small.why, Catch::Contains("no hypothesis fits"));
}

TEST_CASE("exp2 table files that are not tables, truncated or out of order are refused by name",
          "[attention][twins][exp2]") {
  const std::string path = temp_file("exp2_bad");
  const auto write = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  };
  write("hello\n");
  CHECK_THROWS_WITH(read_exp2_table(path),
                    Catch::Contains("not an exp2 table") && Catch::Contains(path));
  write("attndev-exp2-table 1\nfraction_bits=2\n");
  CHECK_THROWS_WITH(read_exp2_table(path), Catch::Contains("header incomplete"));
  write("attndev-exp2-table 1\nfraction_bits=2\nquant=floor\nexceptions=0\nend\nab");
  CHECK_THROWS_WITH(read_exp2_table(path), Catch::Contains("truncated"));
  write("attndev-exp2-table 1\nfraction_bits=x\nexceptions=0\nend\n");
  CHECK_THROWS_WITH(read_exp2_table(path), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(read_exp2_table(path + ".missing"), Catch::Contains("cannot open"));
  std::remove(path.c_str());
}

}  // namespace attndev::attention::twins
