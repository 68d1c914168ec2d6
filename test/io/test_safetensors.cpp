// safetensors: round trips for every dtype, the committed fixtures, folder loading/matching,
// and malformed files built here byte by byte (each must give a TensorFileError naming the
// problem, never a crash or an out-of-bounds read: run under ATTNDEV_SANITIZE to see the latter).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_file_fixture.hpp"
#include "numerics/round.hpp"

namespace {

namespace fs = std::filesystem;
using attndev::io::DType;
using attndev::io::NamedTensor;
using attndev::io::TensorFileError;

fs::path safetensors_scratch(const std::string& name) {
  return attndev::test::tensor_scratch("safetensors", name);
}

// A file built by hand: header text exactly as given, then `data` bytes.
std::vector<unsigned char> raw_file(const std::string& header, std::size_t data_bytes,
                                    std::uint64_t declared_len = ~std::uint64_t{0}) {
  const std::uint64_t n = declared_len == ~std::uint64_t{0} ? header.size() : declared_len;
  std::vector<unsigned char> out(8 + header.size() + data_bytes, 0);
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

// Parses and expects a TensorFileError naming the file and containing every fragment.
void expect_safetensors_error(const std::vector<unsigned char>& bytes,
                              const std::vector<std::string>& fragments) {
  attndev::test::expect_tensor_file_error(
      [&] { attndev::io::parse_safetensors(bytes, "case.safetensors"); }, "case.safetensors",
      fragments);
}

NamedTensor tensor(std::string name, DType dtype, std::vector<std::int64_t> shape,
                   std::vector<double> values) {
  NamedTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.values = std::move(values);
  return t;
}

}  // namespace

TEST_CASE("safetensors: write then read every dtype, values rounded once", "[safetensors]") {
  const std::uint32_t seed = 7;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 3.0);
  std::vector<double> values(60);
  for (double& v : values) v = normal(rng);
  // Specials and rounding hazards: a bf16 tie broken by a low bit, fp16 overflow and subnormals.
  values[0] = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  values[1] = 70000.0;
  values[2] = std::ldexp(1.0, -20);
  values[3] = -0.0;
  values[4] = std::numeric_limits<double>::infinity();
  values[5] = std::numeric_limits<double>::quiet_NaN();

  using attndev::numerics::Format;
  const std::pair<DType, Format> dtypes[] = {{DType::f64, Format::fp64},
                                             {DType::f32, Format::fp32},
                                             {DType::f16, Format::fp16},
                                             {DType::bf16, Format::bf16}};
  std::vector<NamedTensor> tensors;
  for (auto [d, f] : dtypes) {
    tensors.push_back(tensor(std::string("t.") + attndev::io::dtype_name(d), d, {3, 4, 5}, values));
  }
  tensors.push_back(tensor("scalar", DType::f32, {}, {2.5}));
  tensors.push_back(tensor("empty", DType::f16, {0, 3}, {}));

  const fs::path dir = safetensors_scratch("roundtrip");
  const fs::path file = dir / "w.safetensors";
  attndev::io::write_safetensors(file, tensors, {{"step", "100"}, {"algo", "flash2"}});
  // Atomic write: nothing but the file itself remains in the folder.
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);

  const auto got = attndev::io::read_safetensors(file);
  CHECK(got.metadata.at("step") == "100");
  CHECK(got.metadata.at("algo") == "flash2");
  REQUIRE(got.tensors.size() == tensors.size());
  for (std::size_t k = 0; k < 4; ++k) {
    const NamedTensor& t = got.tensors[k];
    const Format f = dtypes[k].second;
    INFO("tensor " << t.name);
    CHECK(t.name == tensors[k].name);
    CHECK(t.dtype == dtypes[k].first);
    CHECK(t.shape == std::vector<std::int64_t>{3, 4, 5});
    REQUIRE(t.values.size() == values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double want = attndev::numerics::round_to(f, values[i]);
      INFO("i=" << i << " in=" << values[i] << " want=" << want << " got=" << t.values[i]);
      if (std::isnan(want))
        CHECK(std::isnan(t.values[i]));
      else
        CHECK((t.values[i] == want && std::signbit(t.values[i]) == std::signbit(want)));
    }
  }
  CHECK(got.tensors[4].shape.empty());
  CHECK(got.tensors[4].values == std::vector<double>{2.5});
  CHECK(got.tensors[5].values.empty());
  CHECK(got.tensors[5].shape == std::vector<std::int64_t>{0, 3});

  // Overwriting goes through the same rename.
  attndev::io::write_safetensors(file,
                                 std::vector<NamedTensor>{tensor("x", DType::f32, {1}, {1.0})});
  CHECK(attndev::io::read_safetensors(file).tensors.at(0).name == "x");
}

TEST_CASE("safetensors: writer rejects bad tensors", "[safetensors]") {
  const fs::path file = safetensors_scratch("reject") / "w.safetensors";
  std::vector<NamedTensor> wrong_count{tensor("a", DType::f32, {2, 2}, {1, 2, 3})};
  CHECK_THROWS_AS(attndev::io::write_safetensors(file, wrong_count), TensorFileError);
  std::vector<NamedTensor> dup{tensor("a", DType::f32, {1}, {1}),
                               tensor("a", DType::f32, {1}, {1})};
  CHECK_THROWS_AS(attndev::io::write_safetensors(file, dup), TensorFileError);
  std::vector<NamedTensor> reserved{tensor("__metadata__", DType::f32, {1}, {1})};
  CHECK_THROWS_AS(attndev::io::write_safetensors(file, reserved), TensorFileError);
  CHECK_FALSE(fs::exists(file));  // nothing half-written
}

TEST_CASE("safetensors and npy files are written with the umask's permissions, not 0600",
          "[safetensors]") {
  // The writers go through mkstemp (0600) and rename; without an fchmod every snapshot was
  // private to its owner whatever the umask said, unlike every other output file.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const fs::path dir = safetensors_scratch("mode");
  const fs::path st = dir / "m.safetensors", npy = dir / "m.npy";
  attndev::io::write_safetensors(st, std::vector<NamedTensor>{tensor("x", DType::f32, {1}, {1})});
  attndev::io::write_npy(npy, tensor("x", DType::f32, {1}, {1}));
  for (const fs::path& f : {st, npy}) {
    struct stat info {};
    REQUIRE(::stat(f.c_str(), &info) == 0);
    INFO(f.string() << " umask " << std::oct << mask);
    CHECK((info.st_mode & 0777) == (0666 & ~mask));
  }
}

TEST_CASE("safetensors: the committed fixture pair", "[safetensors]") {
  const auto a =
      attndev::io::read_safetensors(attndev::test::kTensorFixtures + "pair_a.safetensors");
  const auto b =
      attndev::io::read_safetensors(attndev::test::kTensorFixtures + "pair_b.safetensors");
  CHECK(a.metadata.at("step") == "0");
  CHECK(b.metadata.at("step") == "100");
  REQUIRE(a.tensors.size() == 5);
  REQUIRE(b.tensors.size() == 5);
  CHECK(a.tensors[0].name == "w.f64");
  CHECK(a.tensors[0].dtype == DType::f64);
  CHECK(a.tensors[3].name == "w.bf16");
  CHECK(a.tensors[3].dtype == DType::bf16);
  CHECK(a.tensors[3].shape == std::vector<std::int64_t>{3, 4, 5});
  CHECK(b.tensors[0].name == "bias");  // B was written in reverse order
  CHECK(b.tensors[0].shape == std::vector<std::int64_t>{17});
}

TEST_CASE("load_tensors and match_tensors on folders", "[safetensors]") {
  const auto a = attndev::io::load_tensors(attndev::test::kTensorFixtures + "dir_a");
  const auto b = attndev::io::load_tensors(attndev::test::kTensorFixtures + "dir_b");
  std::vector<std::string> keys_a;
  for (const auto& t : a) keys_a.push_back(t.key);
  CHECK(keys_a == std::vector<std::string>{"model.safetensors:emb", "model.safetensors:only_in_a",
                                           "sub/extra_a.npy", "sub/head.npy"});
  const auto m = attndev::io::match_tensors(a, b);
  REQUIRE(m.pairs.size() == 2);
  CHECK(a[m.pairs[0].first].key == "model.safetensors:emb");
  CHECK(b[m.pairs[0].second].key == "model.safetensors:emb");
  CHECK(a[m.pairs[1].first].key == "sub/head.npy");
  CHECK(m.only_a == std::vector<std::string>{"model.safetensors:only_in_a", "sub/extra_a.npy"});
  CHECK(m.only_b == std::vector<std::string>{"model.safetensors:only_in_b"});

  // Two single .npy files pair up whatever their names.
  const auto x = attndev::io::load_tensors(attndev::test::kTensorFixtures + "equal_a.npy");
  const auto y = attndev::io::load_tensors(attndev::test::kTensorFixtures + "equal_b.npy");
  const auto p = attndev::io::match_tensors(x, y);
  CHECK(p.pairs.size() == 1);
  CHECK(p.only_a.empty());

  CHECK_THROWS_AS(attndev::io::load_tensors(attndev::test::kTensorFixtures + "does_not_exist"),
                  TensorFileError);
  CHECK_THROWS_AS(attndev::io::load_tensors(safetensors_scratch("empty_dir")), TensorFileError);
}

TEST_CASE("safetensors: every truncation of a valid file is an error", "[safetensors]") {
  std::vector<NamedTensor> ts{tensor("a", DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                              tensor("b", DType::bf16, {4}, {1, 2, 3, 4})};
  const auto full = attndev::io::encode_safetensors(ts, {{"k", "v"}});
  REQUIRE(attndev::io::parse_safetensors(full, "ok").tensors.size() == 2);
  int errors = 0;
  for (std::size_t len = 0; len < full.size(); ++len) {
    // A copy of exactly `len` bytes, so that a read past it is caught by the sanitizers.
    const std::vector<unsigned char> cut(full.begin(), full.begin() + len);
    try {
      attndev::io::parse_safetensors(cut, "cut");
    } catch (const TensorFileError&) {
      ++errors;
    }
  }
  CHECK(errors == static_cast<int>(full.size()));
}

TEST_CASE("safetensors: malformed headers give clear errors", "[safetensors]") {
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE(attndev::io::parse_safetensors(raw_file(ok, 8), "ok").tensors.size() == 1);

  SECTION("too short for the length field") {
    expect_safetensors_error({1, 2, 3}, {"too short"});
  }
  SECTION("header length past the end") {
    expect_safetensors_error(raw_file(ok, 8, 5000), {"header length 5000", "truncated"});
  }
  SECTION("header length beyond the limit") {
    expect_safetensors_error(raw_file(ok, 8, std::uint64_t{1} << 40), {"exceeds the limit"});
  }
  SECTION("bad JSON") {
    expect_safetensors_error(raw_file(R"({"w":{"dtype":)", 8), {"not valid JSON"});
  }
  SECTION("JSON that is not an object") {
    expect_safetensors_error(raw_file("[1,2]", 0), {"not an object"});
  }
  SECTION("offsets past the end") {
    expect_safetensors_error(
        raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
        {"tensor 'w'", "past the end"});
  }
  SECTION("shape and size disagree") {
    expect_safetensors_error(
        raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
        {"tensor 'w'", "needs 12 bytes", "span 8"});
  }
  SECTION("unsupported dtype names tensor and dtype") {
    expect_safetensors_error(
        raw_file(R"({"ids":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", 8),
        {"tensor 'ids'", "I32", "F64, F32, F16, BF16"});
  }
  SECTION("negative or fractional dimension") {
    expect_safetensors_error(
        raw_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
        {"tensor 'w'", "negative"});
    expect_safetensors_error(
        raw_file(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})", 8), {"tensor 'w'"});
  }
  SECTION("huge shape cannot overflow the size check") {
    expect_safetensors_error(raw_file(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296,16],)"
                                      R"("data_offsets":[0,8]}})",
                                      8),
                             {"tensor 'w'"});
  }
  SECTION("begin after end") {
    expect_safetensors_error(
        raw_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8), {"begin > end"});
  }
  SECTION("missing fields") {
    expect_safetensors_error(raw_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), {"dtype"});
    expect_safetensors_error(raw_file(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8),
                             {"shape"});
    expect_safetensors_error(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8),
                             {"data_offsets"});
    expect_safetensors_error(raw_file(R"({"w":7})", 0), {"not a JSON object"});
  }
  SECTION("overlapping tensors") {
    expect_safetensors_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                      12),
                             {"overlaps"});
  }
  SECTION("holes and trailing bytes") {
    expect_safetensors_error(
        raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
        {"belong to no tensor"});
    expect_safetensors_error(raw_file(ok, 12), {"4 bytes after the last tensor"});
  }
  SECTION("metadata must map strings to strings") {
    expect_safetensors_error(raw_file(R"({"__metadata__":{"step":3}})", 0), {"__metadata__"});
  }
}
