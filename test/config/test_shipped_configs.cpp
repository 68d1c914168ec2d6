// Every config the project ships must load: a user's first command is `attndev run
// configs/quickstart.json`, and a config broken by a schema change would otherwise be found by the
// first user who tries it. The files are listed at run time, so a new config is covered without
// touching this test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "train/train_config.hpp"
#include "files.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using attndev::test::slurp;

namespace {

const fs::path kConfigs = fs::path(ATTNDEV_SOURCE_DIR) / "configs";

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// An experiment config parses and its plan expands (what `attndev validate` checks).
void check_experiment_config(const fs::path& file) {
  INFO(file.string());
  try {
    const attndev::experiment::Config config = attndev::experiment::parse_config(slurp(file), {});
    const attndev::experiment::Plan plan = attndev::experiment::make_plan(config);
    CHECK_FALSE(plan.points.empty());
    CHECK_FALSE(config.variants.empty());
  } catch (const attndev::config::ConfigError& e) {
    FAIL(file.string() << ": " << e.what());
  }
}

// A training config: a single run, or a study in both its full and its --quick form.
void check_train_config(const fs::path& file) {
  INFO(file.string());
  try {
    const nlohmann::json j = attndev::train::read_json_file(file);
    if (attndev::train::is_study(j)) {
      CHECK_FALSE(attndev::train::parse_study_config(j, /*quick=*/false).runs.empty());
      if (j.contains("quick"))
        CHECK_FALSE(attndev::train::parse_study_config(j, /*quick=*/true).runs.empty());
    } else {
      CHECK(attndev::train::parse_train_config(j).steps > 0);
    }
  } catch (const attndev::config::ConfigError& e) {
    FAIL(file.string() << ": " << e.what());
  }
}

}  // namespace

TEST_CASE("configs/quickstart.json and configs/examples load and plan", "[configs]") {
  std::vector<fs::path> files = {kConfigs / "quickstart.json"};
  const std::vector<fs::path> examples = json_files(kConfigs / "examples");
  REQUIRE_FALSE(examples.empty());
  files.insert(files.end(), examples.begin(), examples.end());
  for (const fs::path& f : files) check_experiment_config(f);
}

TEST_CASE("configs/train configs load", "[configs]") {
  const std::vector<fs::path> files = json_files(kConfigs / "train");
  REQUIRE_FALSE(files.empty());
  for (const fs::path& f : files) check_train_config(f);
}

TEST_CASE("configs/paper and configs/analysis load and plan in full, not only their smoke form",
          "[configs]") {
  std::vector<fs::path> files = json_files(kConfigs / "paper");
  const std::vector<fs::path> analysis = json_files(kConfigs / "analysis");
  files.insert(files.end(), analysis.begin(), analysis.end());
  REQUIRE_FALSE(files.empty());
  for (const fs::path& f : files) {
    // The weight study among the paper configs is a training study, not an experiment config.
    if (attndev::train::is_study(attndev::train::read_json_file(f)))
      check_train_config(f);
    else
      check_experiment_config(f);
  }
}

TEST_CASE("configs/validation load and plan", "[configs]") {
  const std::vector<fs::path> files = json_files(kConfigs / "validation");
  REQUIRE_FALSE(files.empty());
  for (const fs::path& f : files) check_experiment_config(f);
}

// scripts/gpu-check.sh runs torch-cuda.json on a GPU node, where a wrong pairing would only show
// up as meaningless ratios: every real kernel (PyTorch's CUDA backends, attndev's CUDA kernels)
// must run on the GPU and be compared with an emulated twin of the same output format.
TEST_CASE("torch-cuda.json runs every real kernel on the GPU beside an emulated twin",
          "[configs]") {
  using attndev::experiment::Backend;
  const attndev::experiment::Config config =
      attndev::experiment::parse_config(slurp(kConfigs / "validation" / "torch-cuda.json"), {});
  auto find = [&](const std::string& name) -> const attndev::experiment::Variant* {
    for (const auto& v : config.variants)
      if (v.name == name) return &v;
    return nullptr;
  };
  int external = 0, cuda = 0;
  for (const auto& v : config.variants) {
    if (v.backend == Backend::cpu) continue;
    INFO(v.name);
    if (v.backend == Backend::external) {
      ++external;
      REQUIRE(v.external.has_value());
      CHECK(v.external->command.find("--device cuda") != std::string::npos);
    } else {
      CHECK(v.backend == Backend::cuda);
      ++cuda;
    }
    const attndev::experiment::Variant* twin = find(v.reference);
    REQUIRE(twin != nullptr);
    CHECK(twin->backend == Backend::cpu);
    CHECK(v.ratio_to == v.reference);
    CHECK(twin->policy.output == v.policy.output);
  }
  CHECK(external == 8);  // flash, efficient, cudnn, math at bf16 and fp16
  CHECK(cuda == 4);      // flash2-tc and the cuBLAS baseline at bf16 and fp16
}
