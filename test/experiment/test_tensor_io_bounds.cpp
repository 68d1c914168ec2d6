// Bounded reading of an external's output (issue 39 row 1): a file larger than any output of the
// expected shape could be is refused from its size, before its data is read.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiment/run/tensor_io.hpp"

TEST_CASE("an external output far larger than its expected shape is refused unread",
          "[experiment][external][memory]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attndev_bounds_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "output.safetensors";
  { std::ofstream(file) << "x"; }
  fs::resize_file(file, std::uintmax_t{1} << 30);  // 1 GiB, sparse: nothing to read but zeros
  const attndev::attention::Shape expected{1, 2, 64, 64, 16};  // B, H, N_q, N_kv, d
  CHECK_THROWS_WITH(attndev::experiment::read_output_file(file, expected),
                    Catch::Contains("more than an output of shape (1, 2, 64, 16) can take") &&
                        Catch::Contains("not read"));
  // An output of the right size still gets to the parser (and its own message).
  fs::resize_file(file, 100);
  CHECK_THROWS_WITH(attndev::experiment::read_output_file(file, expected),
                    !Catch::Contains("can take"));
  fs::remove_all(dir);
}
