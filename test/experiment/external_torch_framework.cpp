// The framework rounding model against the PyTorch loops it models, end to end: FA-1, FA-2 and
// the explicit baseline written with bf16/fp16 PyTorch tensors (scripts/external/torch_attention.py
// fa1, fa2, explicit) beside flash1, flash2 and baseline under framework-bf16/fp16, on the same
// rounded inputs through the external-variant protocol. Every cell's mean |O - golden| must be
// within 5% of PyTorch's (the full grid is configs/validation/framework-torch.json).
//
// Needs PyTorch: the python of $ATTNDEV_TORCH_PYTHON, of build/venv-torch
// (scripts/validate-torch.sh creates it) or python3 on PATH, whichever imports torch first. Without
// one it exits 77 (ctest: skipped), never passes. Not a catch_discover_tests target
// (test/experiment/extra.cmake). Catch2's implementation comes from attndev_catch_main
// (test/catch_session.cpp); main() is ours.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "catch_run.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/external_helpers.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/runner.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using namespace attndev;
using namespace attndev::experiment;
using attndev::io::Json;

namespace {

std::string g_python;  // set by main

std::string torch_variant(const std::string& impl, const std::string& fmt) {
  const std::string tiles = impl == "explicit" ? "" : " --block-r {block_r} --block-c {block_c}";
  return R"({"name": "torch-)" + impl + "-" + fmt + R"(", "format": ")" + fmt +
         R"(", "external": ")" + g_python + " " + ATTNDEV_SOURCE_DIR +
         "/scripts/external/torch_attention.py {inputs} {output} --threads 1 --dtype " + fmt +
         " --impl " + impl + tiles + "\"}";
}

}  // namespace

TEST_CASE("framework-* agree with the PyTorch loops within 5% of mean deviation",
          "[external][torch]") {
  std::string variants;
  const char* pairs[][2] = {{"fa1", "flash1"}, {"fa2", "flash2"}, {"explicit", "baseline"}};
  for (const std::string fmt : {"bf16", "fp16"}) {
    for (const auto& [impl, alg] : pairs) {
      if (!variants.empty()) variants += ",";
      variants += torch_variant(impl, fmt) + R"(, {"name": ")" + alg + "-" + fmt +
                  R"(", "algorithm": ")" + alg + R"(", "policy": "framework-)" + fmt + "\"}";
    }
  }
  const std::string text = R"J({"name": "framework-torch-ci",
      "axes": {"seq_len": 256, "head_dim": 64, "block_r": 64, "block_c": 32,
               "distribution": ["normal(0,1)", "uniform(0,1)"]},
      "variants": [)J" + variants +
                           "]}";
  const Config config = parse_config(text);
  const fs::path dir = attndev::test::temp_dir("torch_framework");
  RunOptions o;
  o.dir = dir;
  o.threads = 1;
  o.provenance.tool_version = "test";
  run_experiment(config, make_plan(config), o);

  std::map<std::string, Json> rows;  // point/variant -> row
  for (const Json& r : attndev::test::file_rows(dir / "results.jsonl"))
    rows[r["point_id"].get<std::string>() + "/" + r["variant"].get<std::string>()] = r;
  int cells = 0;
  for (const auto& [key, row] : rows) {
    const std::string variant = row["variant"].get<std::string>();
    if (variant.rfind("torch-", 0) == 0) continue;
    const std::string point = key.substr(0, key.find('/'));
    const std::string alg = variant.substr(0, variant.find('-'));
    const std::string fmt = variant.substr(variant.find('-') + 1);
    const std::string impl = alg == "flash1" ? "fa1" : alg == "flash2" ? "fa2" : "explicit";
    const auto torch = rows.find(point + "/torch-" + impl + "-" + fmt);
    REQUIRE(torch != rows.end());
    INFO(variant << " at " << row["distribution"] << " Bc=" << row["block_c"]);
    REQUIRE(row["status"] == "ok");
    REQUIRE(torch->second["status"] == "ok");
    const double ours = row["mean_abs"].get<double>();
    const double theirs = torch->second["mean_abs"].get<double>();
    INFO("attndev mean_abs " << ours << ", PyTorch " << theirs);
    CHECK(std::fabs(ours / theirs - 1.0) <= 0.05);
    ++cells;
  }
  CHECK(cells == 2 * 6);  // distribution x (3 algorithms x 2 formats)
  fs::remove_all(dir);
}

int main(int argc, char** argv) {
  const char* env = std::getenv("ATTNDEV_TORCH_PYTHON");
  g_python = attndev::test::find_python(
      {env ? env : "", std::string(ATTNDEV_SOURCE_DIR) + "/build/venv-torch/bin/python3",
       "python3"},
      "import torch");
  if (g_python.empty()) {
    std::fprintf(stderr,
                 "SKIPPED: no python3 with PyTorch (scripts/validate-torch.sh creates "
                 "build/venv-torch; or set ATTNDEV_TORCH_PYTHON)\n");
    return 77;
  }
  std::printf("python: %s\n", g_python.c_str());
  return attndev::test::run_catch_session(argc, argv);
}
