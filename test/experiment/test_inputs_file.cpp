// Q, K, V from files: the accepted layouts, and every malformed file refused with a message that
// names the file, the tensor and the fix.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "experiment/spec/inputs_file.hpp"
#include "measure/measure.hpp"
#include "io/npy.hpp"
#include "io/safetensors.hpp"

namespace fs = std::filesystem;
using namespace attndev;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() /
                     ("attndev_inputs_file_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

io::NamedTensor tensor(std::string name, std::vector<std::int64_t> shape, double start,
                       io::DType dtype = io::DType::f32) {
  io::NamedTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  std::int64_t n = 1;
  for (std::int64_t d : t.shape) n *= d;
  for (std::int64_t i = 0; i < n; ++i) t.values.push_back(start + 0.25 * static_cast<double>(i));
  return t;
}

std::string error_of(const fs::path& p) {
  try {
    experiment::read_inputs_file(p);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("inputs files: safetensors q/k/v in rank 2, 3 or 4, and a folder of .npy",
          "[inputs_file]") {
  const fs::path dir = fresh_dir("good");
  io::write_safetensors(
      dir / "r4.safetensors",
      std::vector<io::NamedTensor>{tensor("q", {2, 3, 5, 4}, 0), tensor("k", {2, 3, 7, 4}, 1),
                                   tensor("v", {2, 3, 7, 4}, 2)});
  const attention::Inputs a = experiment::read_inputs_file(dir / "r4.safetensors");
  CHECK(a.shape().batch == 2);
  CHECK(a.shape().heads == 3);
  CHECK(a.shape().seq_q == 5);
  CHECK(a.shape().seq_kv == 7);
  CHECK(a.shape().head_dim == 4);
  CHECK(a.k.at(1, 2, 6, 3) == 1 + 0.25 * (((1 * 3 + 2) * 7 + 6) * 4 + 3));

  io::write_safetensors(dir / "r2.safetensors",
                        std::vector<io::NamedTensor>{tensor("query", {6, 8}, 0, io::DType::bf16),
                                                     tensor("key", {6, 8}, 0, io::DType::bf16),
                                                     tensor("value", {6, 8}, 0, io::DType::bf16)});
  const attention::Shape s2 = experiment::inputs_file_shape(dir / "r2.safetensors");
  CHECK(s2.batch == 1);
  CHECK(s2.heads == 1);
  CHECK(s2.seq_q == 6);

  const fs::path npy = dir / "npy";
  fs::create_directories(npy);
  io::write_npy(npy / "Q.npy", tensor("Q", {2, 9, 4}, 0));
  io::write_npy(npy / "K.npy", tensor("K", {2, 9, 4}, 0));
  io::write_npy(npy / "V.npy", tensor("V", {2, 9, 4}, 0));
  const attention::Shape s3 = experiment::inputs_file_shape(npy);
  CHECK(s3.heads == 2);
  CHECK(s3.seq_kv == 9);

  // Rounding to a variant's input format happens once, value by value.
  const attention::Inputs r = measure::round_inputs(a, numerics::Format::fp8_e4m3);
  CHECK(r.q.at(0, 0, 0, 1) == 0.25);
  CHECK(a.v.data.back() == 43.75);
  CHECK(r.v.data.back() == 44.0);  // 1.0101111b x 2^5 to 3 fraction bits: 1.011b x 2^5
  fs::remove_all(dir);
}

TEST_CASE("inputs files: every malformed file is refused with the fix", "[inputs_file][errors]") {
  const fs::path dir = fresh_dir("bad");
  const auto write = [&](const std::string& name, std::vector<io::NamedTensor> t) {
    io::write_safetensors(dir / name, t);
    return dir / name;
  };
  CHECK_THAT(error_of(write("no_v.safetensors", {tensor("q", {4, 2}, 0), tensor("k", {4, 2}, 0)})),
             Catch::Contains("no tensor named v (or V, value) for V; found: q, k"));
  CHECK_THAT(error_of(write("rank.safetensors", {tensor("q", {4, 2}, 0), tensor("k", {1, 4, 2}, 0),
                                                 tensor("v", {1, 4, 2}, 0)})),
             Catch::Contains("must have the same rank"));
  CHECK_THAT(error_of(write("kv.safetensors", {tensor("q", {4, 2}, 0), tensor("k", {5, 2}, 0),
                                               tensor("v", {4, 2}, 0)})),
             Catch::Contains("K (5, 2) and V (4, 2) must have the same shape"));
  CHECK_THAT(error_of(write("dim.safetensors", {tensor("q", {4, 3}, 0), tensor("k", {5, 2}, 0),
                                                tensor("v", {5, 2}, 0)})),
             Catch::Contains("must agree in batch, heads and head dimension"));
  CHECK_THAT(error_of(write("r5.safetensors",
                            {tensor("q", {1, 1, 1, 4, 2}, 0), tensor("k", {1, 1, 1, 4, 2}, 0),
                             tensor("v", {1, 1, 1, 4, 2}, 0)})),
             Catch::Contains("has rank 5"));
  io::NamedTensor bad_q = tensor("q", {4, 2}, 0);
  bad_q.values[5] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(
      error_of(write("nan.safetensors", {bad_q, tensor("k", {4, 2}, 0), tensor("v", {4, 2}, 0)})),
      Catch::Contains("Q ('q'): element 5 is NaN"));
  CHECK_THAT(error_of(write("two_q.safetensors", {tensor("q", {4, 2}, 0), tensor("Q", {4, 2}, 0),
                                                  tensor("k", {4, 2}, 0), tensor("v", {4, 2}, 0)})),
             Catch::Contains("two tensors could be Q"));
  io::write_npy(dir / "single.npy", tensor("single", {4, 2}, 0));
  CHECK_THAT(error_of(dir / "single.npy"),
             Catch::Contains("holds one tensor; Q, K and V are needed"));
  CHECK_THAT(error_of(dir / "missing.safetensors"), Catch::Contains("no such file"));
  fs::remove_all(dir);
}
