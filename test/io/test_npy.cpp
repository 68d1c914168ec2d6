// .npy: round trips, the committed fixtures (versions 1.0/2.0/3.0, Fortran order), and malformed
// files built here (bad magic, truncations, big-endian and non-float dtypes, broken headers).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "io/npy.hpp"
#include "io/tensor_file_fixture.hpp"
#include "numerics/round.hpp"

namespace {

namespace fs = std::filesystem;
using attndev::io::DType;
using attndev::io::NamedTensor;
using attndev::io::TensorFileError;

fs::path npy_scratch(const std::string& name) {
  return attndev::test::tensor_scratch("npy", name);
}

// A version-1.0 file with the header dict exactly as given and `data` appended.
std::vector<unsigned char> npy_file(const std::string& dict, const std::vector<unsigned char>& data,
                                    int major = 1) {
  std::vector<unsigned char> out{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major),
                                 0};
  const std::size_t n = dict.size();
  out.push_back(static_cast<unsigned char>(n & 0xff));
  out.push_back(static_cast<unsigned char>(n >> 8));
  if (major >= 2) {
    out.push_back(0);
    out.push_back(0);
  }
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<unsigned char> f64_bytes(const std::vector<double>& v) {
  std::vector<unsigned char> out(v.size() * 8);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Parses and expects a TensorFileError naming the file and containing every fragment.
void expect_npy_error(const std::vector<unsigned char>& bytes,
                      const std::vector<std::string>& fragments) {
  attndev::test::expect_tensor_file_error(
      [&] { attndev::io::parse_npy(bytes, "case.npy", "case"); }, "case.npy", fragments);
}

}  // namespace

TEST_CASE("npy: write then read f64/f32/f16 in several shapes", "[npy]") {
  const std::uint32_t seed = 11;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 100.0);
  using attndev::numerics::Format;
  const std::pair<DType, Format> dtypes[] = {
      {DType::f64, Format::fp64}, {DType::f32, Format::fp32}, {DType::f16, Format::fp16}};
  const std::vector<std::vector<std::int64_t>> shapes{{}, {1}, {7}, {3, 5}, {2, 3, 4}, {0, 4}};
  const fs::path dir = npy_scratch("roundtrip");
  int checked = 0;
  for (auto [d, f] : dtypes) {
    for (const auto& shape : shapes) {
      NamedTensor t;
      t.name = "x";
      t.dtype = d;
      t.shape = shape;
      t.values.resize(static_cast<std::size_t>(t.numel()));
      for (double& v : t.values) v = normal(rng);
      const fs::path file = dir / "x.npy";
      attndev::io::write_npy(file, t);
      const NamedTensor got = attndev::io::read_npy(file);
      INFO("dtype " << attndev::io::dtype_name(d) << " rank " << shape.size());
      CHECK(got.name == "x");
      CHECK(got.dtype == d);
      CHECK(got.shape == shape);
      REQUIRE(got.values.size() == t.values.size());
      for (std::size_t i = 0; i < t.values.size(); ++i) {
        CHECK(got.values[i] == attndev::numerics::round_to(f, t.values[i]));
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);

  NamedTensor bf;
  bf.name = "b";
  bf.dtype = DType::bf16;
  bf.shape = {1};
  bf.values = {1.0};
  CHECK_THROWS_AS(attndev::io::write_npy(dir / "b.npy", bf), TensorFileError);
  CHECK_FALSE(fs::exists(dir / "b.npy"));
}

TEST_CASE("npy: fixtures of versions 2.0 and 3.0 and Fortran order", "[npy]") {
  const NamedTensor v2 = attndev::io::read_npy(attndev::test::kTensorFixtures + "f16_v2_a.npy");
  CHECK(v2.dtype == DType::f16);
  CHECK(v2.shape == std::vector<std::int64_t>{5, 3});
  const NamedTensor v3 = attndev::io::read_npy(attndev::test::kTensorFixtures + "f16_v3_b.npy");
  CHECK(v3.shape == std::vector<std::int64_t>{5, 3});
  const NamedTensor f = attndev::io::read_npy(attndev::test::kTensorFixtures + "f32_fortran_b.npy");
  CHECK(f.dtype == DType::f32);
  CHECK(f.shape == std::vector<std::int64_t>{6, 7});
}

TEST_CASE("npy: Fortran-ordered data is reordered to C order", "[npy]") {
  // Shape (2, 3, 2): element (i, j, k) holds 100 i + 10 j + k; column-major data order.
  std::vector<double> data;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) data.push_back(100 * i + 10 * j + k);
  const auto bytes =
      npy_file("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 2), }\n", f64_bytes(data));
  const NamedTensor t = attndev::io::parse_npy(bytes, "f.npy", "f");
  REQUIRE(t.values.size() == 12);
  std::size_t flat = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) CHECK(t.values[flat++] == 100 * i + 10 * j + k);
}

TEST_CASE("npy: every truncation of a valid file is an error", "[npy]") {
  NamedTensor t;
  t.name = "x";
  t.dtype = DType::f32;
  t.shape = {2, 2};
  t.values = {1, 2, 3, 4};
  const auto full = attndev::io::encode_npy(t);
  REQUIRE(attndev::io::parse_npy(full, "ok", "x").values.size() == 4);
  int errors = 0;
  for (std::size_t len = 0; len < full.size(); ++len) {
    const std::vector<unsigned char> cut(full.begin(), full.begin() + len);
    try {
      attndev::io::parse_npy(cut, "cut", "x");
    } catch (const TensorFileError&) {
      ++errors;
    }
  }
  CHECK(errors == static_cast<int>(full.size()));
}

TEST_CASE("npy: malformed files give clear errors", "[npy]") {
  const auto two = f64_bytes({1.0, 2.0});
  REQUIRE(attndev::io::parse_npy(
              npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", two), "ok", "x")
              .values.size() == 2);
  SECTION("bad magic") {
    auto bytes = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", two);
    bytes[1] = 'X';
    expect_npy_error(bytes, {"not a .npy file"});
  }
  SECTION("big-endian") {
    expect_npy_error(npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two),
                     {"'>f4'", "big-endian", "astype"});
  }
  SECTION("integer and other non-float dtypes") {
    expect_npy_error(npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", two),
                     {"'<i8'", "not supported"});
    expect_npy_error(npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (16,), }", two),
                     {"'|u1'"});
    expect_npy_error(
        npy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two),
        {"structured"});
  }
  SECTION("unsupported version") {
    auto bytes = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", two);
    bytes[6] = 9;
    expect_npy_error(bytes, {"version 9.0"});
  }
  SECTION("header length past the end") {
    auto bytes = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", {});
    bytes[9] = 0x7f;
    expect_npy_error(bytes, {"runs past the end", "truncated"});
  }
  SECTION("broken header dict") {
    expect_npy_error(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", two),
                     {"malformed .npy header"});
    expect_npy_error(npy_file("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }", two),
                     {"malformed .npy header"});
    expect_npy_error(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", two),
                     {"negative"});
    expect_npy_error(npy_file("{'descr': '<f8', 'shape': (2,), }", two), {"fortran_order"});
    expect_npy_error(
        npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}", two),
        {"malformed"});
    expect_npy_error(
        npy_file("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", two),
        {"occurs twice"});
  }
  SECTION("data shorter or longer than the shape") {
    expect_npy_error(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", two),
                     {"truncated"});
    expect_npy_error(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", two),
                     {"needs 8 data bytes", "holds 16"});
    expect_npy_error(npy_file("{'descr': '<f8', 'fortran_order': False, "
                              "'shape': (4294967296, 4294967296, 4294967296), }",
                              two),
                     {"truncated"});
  }
}
