// Issue 39 (hardening, third pass): each case is a reproducer of the audit's table, run through
// the attndev binary; each fails on the tree before its fix (a hang counts: ctest's timeout).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.hpp"

namespace fs = std::filesystem;
using namespace attndev::test;

namespace {

const char* kHardeningTiny = R"({
  "name": "hard",
  "axes": {"seq_len": [32, 48], "head_dim": 16, "block_c": 16},
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"}
  ]
})";

}  // namespace

TEST_CASE("issue 39 row 3: a key twice in a config is refused with both places", "[cli][json]") {
  const fs::path cfg = write_config("dup_seq", R"({"name": "dup", "axes": {"seq_len": 8,
      "seq_len": 16}, "variants": [{"algorithm": "flash2", "policy": "fp32"}]})");
  for (const char* command : {"validate", "plan"}) {
    const Result r = run_cli({command, cfg.string()});
    INFO(command << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("key \"seq_len\" appears twice"));
    CHECK_THAT(r.err, Catch::Contains("axes.seq_len at line 2, column 7"));
    CHECK_THAT(r.err, Catch::Contains("first at line 1, column 26"));
  }
  const fs::path two = write_config("dup_variants", R"({"name": "dup2", "axes": {"seq_len": 8},
    "variants": [{"algorithm": "flash2", "policy": "fp32"}],
    "variants": [{"algorithm": "baseline", "policy": "fp32"}]})");
  const fs::path out = work_dir() / "dup2_out";
  const Result r = run_cli({"run", two.string(), "-o", out.string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("key \"variants\" appears twice"));
  CHECK_FALSE(fs::exists(out));
  // -a values and --policy objects are JSON too.
  const Result a = run_cli({"validate", cfg.string(), "-a", "seq_len=8"});
  CHECK(a.code == 2);
  const Result p = run_cli({"point", "--n", "32", "--d", "16", "--policy",
                            R"({"base": "kernel-bf16", "prob": "fp32", "prob": "bf16"})"});
  CHECK(p.code == 2);
  CHECK_THAT(p.err, Catch::Contains("key \"prob\" appears twice"));
}

TEST_CASE("issue 39 row 14: compare with an unknown metric is an error, not ratios of 1",
          "[cli][compare]") {
  const fs::path cfg = write_config("cmp_tiny", kHardeningTiny);
  const fs::path out = work_dir() / "cmp_out";
  REQUIRE(run_cli({"run", cfg.string(), "-o", out.string(), "--no-summary"}).code == 0);
  const Result r = run_cli({"compare", out.string(), out.string(), "-m", "rmsee"});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--metric rmsee: unknown metric (did you mean \"rmse\"?)"));
  CHECK(r.out.empty());
  const Result ok = run_cli({"compare", out.string(), out.string(), "-m", "rmse"});
  CHECK(ok.code == 0);
}

TEST_CASE("issue 39 row 16: an invalid ATTNDEV_MEMORY_LIMIT is an error, never ignored",
          "[cli][memory]") {
  for (const char* bad : {"-5", "8G", "", "abc", "99999999999999999999999"}) {
    const Result r =
        run_cli({"point", "--n", "32", "--d", "16"}, {std::string("ATTNDEV_MEMORY_LIMIT=") + bad});
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("is not a memory limit: give a positive whole number"));
    CHECK(r.out.empty());
  }
  const Result good =
      run_cli({"point", "--n", "32", "--d", "16"}, {"ATTNDEV_MEMORY_LIMIT=8000000000"});
  CHECK(good.code == 0);
  CHECK(run_cli({"--help"}, {"ATTNDEV_MEMORY_LIMIT=-5"}).code == 0);
}

TEST_CASE("issue 39 row 13: sbatch options given by a prefix of a reserved one are refused",
          "[cli][slurm]") {
  const fs::path cfg = write_config("sb_tiny", kHardeningTiny);
  const auto slurm = [&](const std::string& option, const std::string& dir) {
    return run_cli({"slurm", cfg.string(), "--shards", "2", "-o", (work_dir() / dir).string(),
                    "--allow-native", "--sbatch", option});
  };
  for (const auto& [option, owned] :
       std::vector<std::pair<std::string, std::string>>{{"--arr=0-99", "--array"},
                                                        {"--out=/tmp/x", "--output"},
                                                        {"--job=x", "--job-name"},
                                                        {"--dep=afterok:1", "--dependency"}}) {
    const Result r = slurm(option, "sb_refused");
    INFO(option << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("as " + owned + ": it accepts any unambiguous prefix"));
    CHECK_FALSE(fs::exists(work_dir() / "sb_refused"));
  }
  CHECK(slurm("--gpus=1", "sb_gpus").code == 0);
  CHECK(slurm("--account=proj", "sb_account").code == 0);
}

TEST_CASE("issue 39 row 16: slurm -o with a newline is said as -o", "[cli][slurm]") {
  const fs::path cfg = write_config("sb_nl", kHardeningTiny);
  const Result r = run_cli({"slurm", cfg.string(), "--shards", "2", "-o",
                            (work_dir() / "a\nb").string(), "--allow-native"});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("the output directory (-o) contains a newline"));
}

TEST_CASE("issue 39 row 12: variant names with control characters are refused", "[cli][names]") {
  const fs::path cfg = write_config("esc_name", R"({"name": "esc", "axes": {"seq_len": 8},
      "variants": [{"name": "x\u001b]0;t\u0007", "algorithm": "flash2", "policy": "fp32"}]})");
  const Result r = run_cli({"validate", cfg.string()});
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("variants[0].name"));
  CHECK_THAT(r.err, Catch::Contains("x\\x1B]0;t\\x07"));
  CHECK(r.err.find('\x1b') == std::string::npos);
}

TEST_CASE("issue 39 rows 11 and 12: names with / _ | = stay apart in dumps and inert in tables",
          "[cli][names]") {
  const fs::path cfg = write_config("names_dump", R"json({"name": "names", "dump": true,
      "axes": {"seq_len": 16, "head_dim": 8, "block_c": 16},
      "variants": [{"name": "x/y", "algorithm": "flash2", "policy": "fp32"},
                   {"name": "x_y", "algorithm": "flash2", "policy": "kernel-bf16"},
                   {"name": "=HYPERLINK(\"http://e\",\"a|b\")", "algorithm": "baseline",
                    "policy": "fp32"}]
})json");
  const fs::path out = work_dir() / "names_out";
  const Result r = run_cli({"run", cfg.string(), "-o", out.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::vector<std::string> files;
  for (const auto& point : fs::directory_iterator(out / "dump"))
    for (const auto& f : fs::directory_iterator(point.path())) files.push_back(f.path().filename());
  CHECK(std::count(files.begin(), files.end(), "x%2Fy.safetensors") == 1);
  CHECK(std::count(files.begin(), files.end(), "x_y.safetensors") == 1);
  const std::string csv = slurp(out / "results.csv");
  CHECK(csv.find(",\"'=HYPERLINK(") != std::string::npos);
  CHECK(csv.find(",=HYPERLINK") == std::string::npos);
  const std::string md = slurp(out / "summary.md");
  CHECK(md.find("a\\|b") != std::string::npos);
}

TEST_CASE("issue 39 row 7: a FIFO under a dump name is refused at once", "[cli][links]") {
  const fs::path dump = work_dir() / "fifo_dump";
  fs::create_directories(dump);
  REQUIRE(::mkfifo((dump / "inputs-bf16.safetensors").c_str(), 0644) == 0);
  const Result r = run_cli({"point", "--n", "32", "--d", "16", "--dump", dump.string()});
  INFO(r.err);
  CHECK(r.code != 0);
  CHECK_THAT(r.err, Catch::Contains("a FIFO"));
  // In a run's folder: dump/<id>/ planted as a link to elsewhere is not followed.
  const fs::path cfg = write_config("fifo_run", R"({"name": "fr", "dump": true,
      "axes": {"seq_len": 16, "head_dim": 8}, "variants": [{"algorithm": "flash2",
      "policy": "fp32"}]})");
  const fs::path out = work_dir() / "fifo_run_out";
  const fs::path elsewhere = work_dir() / "elsewhere";
  fs::create_directories(out / "dump");
  fs::create_directories(elsewhere);
  const Result plan = run_cli({"plan", cfg.string(), "--json"});
  REQUIRE(plan.code == 0);
  const std::string id = nlohmann::json::parse(plan.out)["points"][0]["id"].get<std::string>();
  fs::create_symlink(elsewhere, out / "dump" / id);
  const Result run = run_cli({"run", cfg.string(), "-o", out.string()});
  INFO(run.err);
  CHECK(run.code != 0);
  CHECK_THAT(run.err, Catch::Contains("not a folder"));
  CHECK(fs::is_empty(elsewhere));
}

TEST_CASE("issue 39 row 9: resuming a run whose files have hard links leaves the copy unchanged",
          "[cli][links]") {
  const fs::path cfg = write_config("hl_tiny", kHardeningTiny);
  const fs::path out = work_dir() / "hl_out";
  REQUIRE(run_cli({"run", cfg.string(), "-o", out.string()}).code == 0);
  // As a run killed after its first point left it: the rows of seq_len 48 gone.
  std::string kept;
  std::istringstream lines(slurp(out / "results.jsonl"));
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"seq_len\":48") == std::string::npos) kept += line + "\n";
  write_text(out / "results.jsonl", kept);
  REQUIRE(count_rows(out / "results.jsonl") == 2);
  const fs::path backup = work_dir() / "hl_backup";
  fs::create_directories(backup);
  for (const auto& f : fs::directory_iterator(out))
    if (f.is_regular_file()) fs::create_hard_link(f.path(), backup / f.path().filename());
  const std::string before = slurp(backup / "results.jsonl");
  REQUIRE(run_cli({"run", cfg.string(), "-o", out.string()}).code == 0);
  CHECK(slurp(backup / "results.jsonl") == before);
  CHECK(count_rows(out / "results.jsonl") == 4);
  CHECK(count_rows(backup / "results.jsonl") == 2);
}

TEST_CASE("issue 39 row 15: point on inputs that overflow or a non-finite golden is skipped",
          "[cli][measure]") {
  const Result r = run_cli({"point", "--n", "16", "--d", "8", "--policy", "kernel-fp16",
                            "--distribution", "normal(0,1e5)"});
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("skipped: inputs overflow fp16"));
  CHECK(r.out.find("nan") == std::string::npos);
  const Result g = run_cli(
      {"point", "--n", "16", "--d", "8", "--policy", "fp64", "--distribution", "normal(0,1e200)"});
  INFO(g.err);
  CHECK(g.code == 3);
  CHECK_THAT(g.err, Catch::Contains("the FP64 golden is not finite"));
}
