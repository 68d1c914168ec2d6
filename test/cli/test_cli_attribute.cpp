// `attndev attribute` end to end on a small real run: the table on stdout and in
// attribution.md/.csv, a no-op override reported as one (with the measurement that confirms it),
// a left-out stage reported as not run, a cell checked against the rows of results.jsonl, and the
// refusals. Also the parse errors in attndev's voice and `attndev help`.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.hpp"

namespace fs = std::filesystem;
using namespace attndev::test;

namespace {

// flash1 under framework-bf16 at N = 32 and 64, d = 16, two trials: a second or two.
std::vector<std::string> small_attribute(const fs::path& dir) {
  return {"attribute", "--algo",    "flash1", "--policy",  "framework-bf16", "--n", "32,64",
          "--d",       "16",        "--br",   "16",        "--bc",           "16",  "--trials",
          "2",         "--no-draw", "-o",     dir.string()};
}

// The line of a markdown table whose first cell is `label`.
std::string table_line(const std::string& md, const std::string& label) {
  const std::string start = "| " + label + " |";
  const auto pos = md.find(start);
  if (pos == std::string::npos) return "";
  return md.substr(pos, md.find('\n', pos) - pos);
}

}  // namespace

TEST_CASE("attribute reports a no-op stage override as one, and a left-out stage as not run",
          "[cli][attribute]") {
  const fs::path dir = work_dir() / "attribute";
  const Result r = run_cli(small_attribute(dir));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("## flash1 under framework-bf16: which stage causes"));
  CHECK_THAT(r.out, Catch::Contains("| stages | N=32 | N=64 | note |"));
  // score only ever rounds what score_accum stored in bf16: raising it alone changes nothing,
  // which the table says from the model and confirms from the rows.
  const std::string score = table_line(r.out, "raise score to fp32");
  CHECK_THAT(score, Catch::Contains("cannot change a bit: score rounds only values of "
                                    "score_accum, which are bf16 already"));
  CHECK_THAT(score, Catch::Contains("measured: every metric equal to the policy as is"));
  CHECK_THAT(table_line(r.out, "raise score_accum+score to fp32 (together)"),
             Catch::Contains("moved together: raising score alone cannot change a bit"));
  // The input stage alone is not run: the golden sees the same rounded inputs.
  CHECK_THAT(table_line(r.out, "only input (bf16), the rest fp64"),
             Catch::Contains("| - | - | not run; every row rounds the inputs as the policy does"));
  for (const char* file : {"attribution.md", "attribution.csv", "summary.md", "results.jsonl"})
    CHECK(fs::exists(dir / file));
  CHECK(slurp(dir / "attribution.md").find(score) != std::string::npos);
  CHECK(slurp(dir / "summary.md").find(score) != std::string::npos);

  // The as-is cell at N=32: the mean of the two trials' ratio_max_abs of "flash1 none".
  std::ifstream in(dir / "results.jsonl");
  std::string line;
  double sum = 0;
  int n = 0;
  while (std::getline(in, line)) {
    const auto row = nlohmann::json::parse(line);
    if (row.value("record", "") == "row" && row.value("variant", "") == "flash1 none" &&
        row.value("seq_len", 0) == 32) {
      sum += row["ratio_max_abs"].get<double>();
      ++n;
    }
  }
  REQUIRE(n == 2);
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.3g", sum / n);
  CHECK_THAT(table_line(r.out, "as is (framework-bf16)"),
             Catch::StartsWith("| as is (framework-bf16) | " + std::string(expected) + " ("));

  // Rerunning resumes: nothing is computed again and the same table comes out.
  const Result again = run_cli(small_attribute(dir));
  INFO(again.err);
  CHECK(again.code == 0);
  CHECK(again.out == r.out);
}

TEST_CASE("attribute --print-config writes a config that run accepts, and bad requests exit 2",
          "[cli][attribute]") {
  const Result printed =
      run_cli({"attribute", "--algo", "flash2", "--policy", "kernel-bf16", "--print-config"});
  INFO(printed.err);
  REQUIRE(printed.code == 0);
  const auto cfg = nlohmann::json::parse(printed.out);
  CHECK(cfg["axes"]["stage"].front() == "none");
  const fs::path file = write_config("attribute_printed", printed.out);
  CHECK(run_cli({"validate", file.string()}).code == 0);

  const fs::path plain = write_config("attribute_plain", R"({"name": "p", "axes": {"seq_len": [16]},
      "variants": [{"algorithm": "flash2", "policy": "kernel-bf16"}]})");
  struct Bad {
    std::vector<std::string> args;
    const char* fragment;
  };
  const std::vector<Bad> cases = {
      {{"attribute", file.string(), "--algo", "flash1"}, "--algo with a CONFIG"},
      {{"attribute", plain.string()}, "no variant has a \"stage\" key"},
      {{"attribute", "--metric", "cos_sim"}, "--metric cos_sim: expected one of max_abs"},
      {{"attribute", "--algo", "flash3-fp8"}, "quantize their inputs themselves"},
      {{"attribute", "--algo", "baseline"}, "the algorithm itself"},
      {{"attribute", "--policy", "kernel-bf17"}, "unknown policy preset \"kernel-bf17\""},
      {{"attribute", "--n", "256,0"}, "--seq-len must be >= 1, got 0"},
  };
  for (const Bad& bad : cases) {
    const Result r = run_cli(bad.args);
    INFO(bad.args[1] << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(bad.fragment));
    CHECK(r.out.empty());
  }
}

TEST_CASE("a mistyped option is named with a suggestion before any missing argument",
          "[cli][messages]") {
  // CLI11 alone said "config is required" here: the typo that caused it went unmentioned.
  const Result r = run_cli({"run", "--hepl"});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("attndev run: error: unknown option '--hepl' (did you "
                                      "mean \"--help\"?)"));
  CHECK_THAT(r.err, Catch::Contains("'attndev help run' lists the arguments and options"));
  CHECK_THAT(r.err, !Catch::Contains("config is required"));
  const Result point = run_cli({"point", "--nn", "5"});
  CHECK(point.code == 2);
  CHECK_THAT(point.err, Catch::Contains("unknown option '--nn' (did you mean \"--n\"?)"));
  const Result missing = run_cli({"plot"});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("the dir argument is missing"));
}

TEST_CASE("attndev help COMMAND prints the command's help, and help of nothing known says so",
          "[cli][messages]") {
  const Result h = run_cli({"help", "run"});
  INFO(h.err);
  CHECK(h.code == 0);
  CHECK_THAT(h.out, Catch::Contains("Usage: attndev run [OPTIONS] config"));
  CHECK(h.out == run_cli({"run", "--help"}).out);
  const Result all = run_cli({"help"});
  CHECK(all.code == 0);
  CHECK_THAT(all.out, Catch::Contains("Usage: attndev [OPTIONS] SUBCOMMAND"));
  CHECK_THAT(all.out, Catch::Contains("attribute"));
  const Result bad = run_cli({"help", "rnu"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("no command 'rnu' (did you mean \"run\"?)"));
}
