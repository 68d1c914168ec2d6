// Shared by the tensor file readers' tests (.npy, safetensors): the committed fixtures, scratch
// folders, and the check that a malformed file gives a TensorFileError naming the problem.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "io/tensor_file.hpp"
#include "build_paths.hpp"

namespace attndev::test {

// The committed fixtures (written by numpy and the safetensors package).
inline const std::string kTensorFixtures = std::string(ATTNDEV_SOURCE_DIR) + "/test/data/wdist/";

// A fresh, empty folder test-scratch/<reader>/<name> under the build tree.
inline std::filesystem::path tensor_scratch(const std::string& reader, const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::path(ATTNDEV_BINARY_DIR) / "test-scratch" / reader / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// `parse()` must throw a TensorFileError whose message names `file` and contains every fragment.
template <class Parse>
void expect_tensor_file_error(Parse parse, const std::string& file,
                              const std::vector<std::string>& fragments) {
  try {
    parse();
    FAIL("no error; expected one mentioning " << fragments.front());
  } catch (const io::TensorFileError& e) {
    const std::string what = e.what();
    INFO("message: " << what);
    CHECK(what.find(file) != std::string::npos);
    for (const auto& f : fragments) CHECK(what.find(f) != std::string::npos);
  }
}

}  // namespace attndev::test
