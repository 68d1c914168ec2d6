// `attndev check CONFIG --max-ratio R`: the deviation gate for CI. A variant within the limit
// exits 0; one above it exits 1 naming the variant, its worst ratio and where; bad flags and a
// config without ratio_to exit 2; the rows are those of `attndev run` (a second check resumes).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "spawn.hpp"

namespace fs = std::filesystem;
using namespace attndev::test;

namespace {

// flash2 under the FA-2 kernel policy against a framework's math path (ratio about 0.5), and
// flash1 as Golden et al. wrote it, in bf16 framework tensors (ratio well above 1 at these N).
const char* kGate = R"({
  "name": "cli-check",
  "axes": {"seq_len": [128, 256], "head_dim": 32, "block_c": 32},
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16"},
    {"name": "fa2", "algorithm": "flash2", "policy": "kernel-bf16", "ratio_to": "base"},
    {"name": "base-fw", "algorithm": "baseline", "policy": "framework-bf16"},
    {"name": "fa1-fw", "algorithm": "flash1", "policy": "framework-bf16", "ratio_to": "base-fw"}
  ]
})";

const char* kNoReference = R"({
  "name": "cli-check-none",
  "axes": {"seq_len": 64, "head_dim": 16},
  "variants": [{"name": "fa2", "algorithm": "flash2", "policy": "kernel-bf16"}]
})";

}  // namespace

TEST_CASE("check passes within the ratio and fails above it, naming the variant", "[cli][check]") {
  const fs::path config = write_config("check", kGate);
  const fs::path out = work_dir() / "check-out";
  // Only fa2 held to 1: the config's other reference pair is checked too, so the gate fails on
  // fa1-fw and says so, with fa2 within.
  Result r = run_cli({"check", config.string(), "--max-ratio", "1", "-o", out.string()});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("check: ratio_max_abs <= 1 at every point") != std::string::npos);
  const auto line = [&](const std::string& variant) {
    const auto at = r.out.find("\n" + variant + " ");
    return at == std::string::npos ? std::string()
                                   : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  CHECK(line("fa2").find(" ok ") != std::string::npos);
  CHECK(line("fa1-fw").find(" EXCEEDS ") != std::string::npos);
  CHECK(line("fa1-fw").find("seq_len=") != std::string::npos);
  CHECK(r.out.find("1 of 2 variants within 1") != std::string::npos);
  // A generous limit passes; the second check resumes the folder (no point is run again).
  r = run_cli({"check", config.string(), "--max-ratio", "1000", "-o", out.string()});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("2 of 2 variants within 1000") != std::string::npos);
  CHECK(r.err.find("2 points (2 resumed, 0 run now)") != std::string::npos);
  CHECK(count_rows(out / "results.jsonl") == 2 * 4);
  // Another metric: the rmse ratio of flash2 is about 0.5 at these points.
  r = run_cli(
      {"check", config.string(), "--max-ratio", "2", "--metric", "rmse", "-o", out.string()});
  INFO(r.out << r.err);
  CHECK(r.out.find("check: ratio_rmse <= 2") != std::string::npos);
  CHECK(line("fa2").find(" ok ") != std::string::npos);
}

TEST_CASE("check refuses bad flags and a config without a reference", "[cli][check][errors]") {
  const fs::path config = write_config("check-flags", kGate);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"check", config.string(), "--max-ratio", "0"},
       "--max-ratio: expected a finite number > 0, got 0"},
      {{"check", config.string(), "--max-ratio", "-2"},
       "--max-ratio: expected a finite number > 0, got -2"},
      {{"check", config.string(), "--max-ratio", "2", "--metric", "rmes"},
       "--metric: \"rmes\" has no ratio (did you mean \"rmse\"?); valid: max_abs, mean_abs"},
      {{"check", config.string(), "--max-ratio", "2", "--metric", "cos_sim"},
       "--metric: \"cos_sim\" has no ratio"},
      {{"check", write_config("check-none", kNoReference).string(), "--max-ratio", "2"},
       "no variant has a \"ratio_to\" reference, so there is no ratio to check"},
  };
  for (const Case& c : cases) {
    const Result r = run_cli(c.args);
    INFO(c.args[3] << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
  const Result help = run_cli({"check", "--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("--max-ratio") != std::string::npos);
}
