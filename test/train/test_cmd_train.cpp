// `attndev train` end to end: the quick study writes every promised file with real rows, and bad
// input exits 2 with a message and leaves no output folder behind.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "io/csv.hpp"
#include "io/safetensors.hpp"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code = -1;
  std::string err;
};

const fs::path& scratch() {
  static const fs::path d =
      fs::temp_directory_path() / ("attndev_cmd_train_" + std::to_string(::getpid()));
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result run_attndev(const std::string& args) {
  fs::create_directories(scratch());
  const std::string binary = ATTNDEV_BINARY_DIR "/apps/attndev/attndev";
  REQUIRE(fs::exists(binary));
  const fs::path err = scratch() / "stderr";
  const std::string cmd =
      "'" + binary + "' " + args + " >/dev/null 2>'" + err.string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), slurp(err)};
}

const std::string kStudy = ATTNDEV_SOURCE_DIR "/configs/paper/golden2024-fig7-8-weights.json";

}  // namespace

TEST_CASE("attndev train --quick runs the weight study end to end", "[train][cli]") {
  const fs::path out = scratch() / "quick";
  fs::remove_all(out);
  // Falls back to a base-files text when fortunes-min is not installed (see test_training.cpp).
  const bool have_corpus = fs::exists("/usr/share/games/fortunes/fortunes");
  if (!have_corpus) WARN("fortunes-min missing: training the CLI test on GPL-3");
  const Result r = run_attndev("train '" + kStudy + "' --quick -j 2 -o '" + out.string() + "'" +
                               (have_corpus ? "" : " --text /usr/share/common-licenses/GPL-3"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* f : {"summary.md", "weights_comparison.csv", "ratios.csv", "study.json",
                        "flash2-bf16-s1/loss.csv", "baseline-fp16-s1/run.json"})
    CHECK(fs::exists(out / f));
  const auto rows = attndev::io::parse_csv(slurp(out / "weights_comparison.csv"));
  REQUIRE(rows.size() > 1);
  int flash_all = 0;
  for (const auto& row : rows)
    if (row.size() == 8 && row[1] == "flash" && row[5] == "all") {
      ++flash_all;
      // Identical inits at step 0; afterwards the two attention algorithms must have diverged.
      if (row[0] == "0")
        CHECK(std::stod(row[6]) == 0.0);
      else
        CHECK(std::stod(row[6]) > 0.0);
    }
  CHECK(flash_all == 4);  // steps 0, 10, 20, 30 of the quick form
  const auto snap =
      attndev::io::read_safetensors(out / "flash2-bf16-s1/snapshots/step_000030.safetensors");
  CHECK(snap.tensors.size() == 2 + 12 + 3);  // embeddings, one block, ln_f + head
  CHECK(snap.metadata.at("algorithm") == "flash2");
  fs::remove_all(scratch());
}

TEST_CASE("attndev train rejects bad input with exit 2 and writes nothing", "[train][cli]") {
  fs::create_directories(scratch());
  const fs::path bad = scratch() / "bad.json";
  std::ofstream(bad) << R"({"attention": {"algoritm": "flash2"}})";
  const fs::path out = scratch() / "never";
  Result r = run_attndev("train '" + bad.string() + "' -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("attention.algoritm") && Catch::Contains("algorithm"));
  CHECK_FALSE(fs::exists(out));
  r = run_attndev("train '" + kStudy + "' --text /nonexistent.txt -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent.txt"));
  CHECK_FALSE(fs::exists(out));
  fs::remove_all(scratch());
}
