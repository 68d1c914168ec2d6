// The run-level cuda backend from the command line: what CI can check without a GPU. A cuda run,
// point or bench exits 2 before anything is computed or written, naming the missing device and
// the way to run on the CPU; plan holds a config's GPU work against a device's memory given on
// the command line and refuses what cannot fit, with the numbers. On a machine with a GPU the
// same commands run, and the rows say where each part ran.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "spawn.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attndev::test;

namespace {

const char* kBackendConfig = R"({
  "name": "cli-backend",
  "axes": {"seq_len": [24, 40], "head_dim": 8, "block_r": 8, "block_c": 8},
  "trials": 1,
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"}
  ]
})";

std::string with_backend(const std::string& config, const std::string& backend) {
  std::string text = config;
  text.insert(text.find("\"axes\""), "\"backend\": \"" + backend + "\", ");
  return text;
}

// Where each part of every row of a results file ran.
std::vector<json> ran_on_of(const fs::path& file) {
  std::vector<json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const json r = json::parse(line);
    if (r["record"] == "row") out.push_back(r["ran_on"]);
  }
  return out;
}

// Without a device: exit 2, the reason and the way to the CPU in the message, nothing written.
void require_refused_before_anything(const Result& r, const fs::path& out_dir) {
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("the cuda backend needs"));
  CHECK_THAT(r.err, Catch::Contains("--backend cpu"));
  CHECK(r.out.empty());
  CHECK_FALSE(fs::exists(out_dir));
}

}  // namespace

TEST_CASE("a cuda run without a device exits 2 before anything is written", "[cli][backend]") {
  const fs::path cfg = write_config("cuda_backend", with_backend(kBackendConfig, "cuda"));
  const fs::path dir = work_dir() / "cuda-run";
  const Result r = run_cli({"run", cfg.string(), "-o", dir.string()});
  if (r.code == 0) {  // a machine with a GPU: every part but the metrics ran there
    for (const json& where : ran_on_of(dir / "results.jsonl")) {
      CHECK(where["inputs"] == "cuda");
      CHECK(where["golden"] == "cuda");
      CHECK(where["variant"] == "cuda");
      CHECK(where["metrics"] == "cpu");
    }
    return;
  }
  require_refused_before_anything(r, dir);
  // --backend cuda on a cpu config is the same refusal; --backend cpu runs the cuda config here.
  const fs::path cpu_cfg = write_config("cpu_backend", kBackendConfig);
  require_refused_before_anything(
      run_cli({"run", cpu_cfg.string(), "-o", dir.string(), "--backend", "cuda"}), dir);
  const Result cpu = run_cli({"run", cfg.string(), "-o", dir.string(), "--backend", "cpu"});
  INFO(cpu.err);
  REQUIRE(cpu.code == 0);
  const std::vector<json> rows = ran_on_of(dir / "results.jsonl");
  CHECK(rows.size() == 4);
  for (const json& where : rows) {
    CHECK(where["inputs"] == "cpu");
    CHECK(where["golden"] == "cpu");
    CHECK(where["variant"] == "cpu");
  }
  // The run-level backend is not part of the hash: the cuda config's folder is this one.
  const Result again = run_cli({"run", cpu_cfg.string(), "-o", dir.string()});
  CHECK(again.code == 0);
  CHECK_THAT(again.err, Catch::Contains("2 resumed"));
}

TEST_CASE("a run-level backend that is neither cpu nor cuda is a config error", "[cli][backend]") {
  const fs::path cfg = write_config("gpu_backend", with_backend(kBackendConfig, "gpu"));
  const Result r = run_cli({"validate", cfg.string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("backend: unknown run-level backend \"gpu\""));
  const Result flag =
      run_cli({"run", write_config("b", kBackendConfig).string(), "--backend", "tpu"});
  CHECK(flag.code == 2);
  CHECK_THAT(flag.err, Catch::Contains("--backend: unknown backend \"tpu\""));
}

TEST_CASE("point and bench with --backend cuda exit 2 without a device, computing nothing",
          "[cli][backend]") {
  const Result point = run_cli({"point", "--backend", "cuda", "--n", "32", "--d", "8"});
  if (point.code != 0) {
    INFO(point.err);
    CHECK(point.code == 2);
    CHECK_THAT(point.err, Catch::Contains("--backend cuda: the cuda backend needs"));
    CHECK_THAT(point.err, Catch::Contains("--backend cpu"));
    CHECK(point.out.empty());
  } else {
    CHECK_THAT(point.out, Catch::Contains("ran on: inputs cuda, golden cuda, variant cuda"));
  }
  const Result bench = run_cli({"bench", "--backend", "cuda", "--n", "64", "--d", "64"});
  if (bench.code != 0) {
    INFO(bench.err);
    CHECK(bench.code == 2);
    CHECK_THAT(bench.err, Catch::Contains("bench --backend cuda: the cuda backend needs"));
    CHECK(bench.out.empty());
  }
  // A combination that means nothing is refused on any machine.
  const Result all = run_cli({"bench", "--backend", "cuda", "--all"});
  CHECK(all.code == 2);
  CHECK_THAT(all.err, Catch::Contains("--all times the CPU emulator's standard set"));
}

TEST_CASE("plan holds GPU work against --device-memory and refuses what cannot fit",
          "[cli][backend][plan]") {
  const std::string config =
      std::string(ATTNDEV_SOURCE_DIR) + "/configs/examples/long-context.json";
  // At N = 131072 the cuBLAS baseline's staged doubles, operands, output and one row of S and P
  // (674 MiB) plus the 1 GiB reserve pass 1.5 GiB; every part at N = 65536 fits.
  const Result small = run_cli({"plan", config, "--no-estimate", "--device-memory", "1.5GiB"});
  INFO(small.err);
  CHECK(small.code == 2);
  CHECK_THAT(small.out, Catch::Contains("device memory: "));
  CHECK_THAT(small.out, Catch::Contains("points that cannot fit in device memory (1):"));
  CHECK_THAT(small.out, Catch::Contains("cublas-baseline-"));
  CHECK_THAT(small.out, Catch::Contains("seq_len=131072"));
  CHECK_THAT(small.err, Catch::Contains("1 point(s) cannot fit in the device memory of "
                                        "--device-memory 1.5GiB"));
  const Result big = run_cli({"plan", config, "--no-estimate", "--device-memory", "80GiB"});
  CHECK(big.code == 0);
  CHECK_THAT(big.out, Catch::Contains("; --device-memory 80GiB has 80.0 GiB"));
  const Result json_plan =
      run_cli({"plan", config, "--no-estimate", "--device-memory", "1.5GiB", "--json"});
  CHECK(json_plan.code == 2);
  const json j = json::parse(json_plan.out);
  CHECK(j["backend"] == "cuda");
  CHECK(j["device_memory"]["misfits_total"] == 1);
  CHECK(j["device_memory"]["device_bytes"] == 3ull << 29);
  const Result bad = run_cli({"plan", config, "--no-estimate", "--device-memory", "80 furlongs"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--device-memory: \"80 furlongs\" is not a size"));
  // A cpu plan of a config without cuda variants has no device part at all.
  const Result cpu =
      run_cli({"plan", write_config("plan_cpu", kBackendConfig).string(), "--no-estimate"});
  CHECK(cpu.code == 0);
  CHECK_THAT(cpu.out, !Catch::Contains("device memory"));
}
