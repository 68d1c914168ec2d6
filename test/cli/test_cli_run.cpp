// `attndev run/validate/plan/report/merge/compare` as a user drives them: bad configs exit 2 with
// the JSON path and nothing written; a run killed with SIGKILL mid-sweep and resumed equals an
// uninterrupted run with no duplicates; SIGINT exits 75 and resumes; shards + merge; report.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attndev::test;

namespace {

// Rows keyed by (point, variant) without timing; REQUIREs that no key repeats.
std::map<std::string, json> rows_of(const fs::path& file) {
  std::map<std::string, json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const json r = json::parse(line);
    if (r["record"] != "row") continue;
    json c = r;
    c.erase("runtime_ms");
    c.erase("gflops");
    c.erase("tflops");
    const std::string key =
        r["point_id"].get<std::string>() + "/" + r["variant"].get<std::string>();
    INFO("duplicate row " << key << " in " << file);
    REQUIRE(out.count(key) == 0);
    out[key] = c;
  }
  return out;
}

const char* kSmall = R"({
  "name": "cli-small",
  "axes": {"seq_len": [48, 80], "head_dim": 16, "block_c": [16, 32]},
  "trials": 2,
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"}
  ]
})";

// Big enough (216 rows) that a kill polled every 1 ms lands mid-sweep; the test REQUIREs that it
// did.
const char* kLong = R"({
  "name": "cli-long",
  "axes": {"seq_len": [160, 224, 288, 352], "head_dim": 32, "block_r": [16, 32], "block_c": [16, 32, 64]},
  "trials": 3,
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
    {"name": "flash-fp16", "algorithm": "flash2", "policy": "kernel-fp16"}
  ]
})";

}  // namespace

TEST_CASE("bad configs exit 2 naming the JSON path, and write nothing", "[cli][run][errors]") {
  struct Case {
    const char* name;
    std::string text;
    std::vector<std::string> extra;
    const char* fragment;
  };
  const std::string head = R"({"name": "bad", )";
  const std::string ok_variants =
      R"("variants": [{"algorithm": "flash2", "policy": "kernel-bf16"}])";
  const std::string ok_axes = R"("axes": {"seq_len": [64]})";
  const std::vector<Case> cases = {
      {"syntax", R"({"name": "bad" "axes": {}})", {}, "invalid JSON at line 1, column"},
      {"unknown key",
       head + ok_axes + ", " + ok_variants + R"(, "trails": 3})",
       {},
       "trails: unknown key \"trails\" (did you mean \"trials\"?)"},
      {"unknown axis",
       head + R"("axes": {"seq_len": [64], "head_dims": [64]}, )" + ok_variants + "}",
       {},
       "axes.head_dims: unknown key"},
      {"empty axis",
       head + R"("axes": {"seq_len": []}, )" + ok_variants + "}",
       {},
       "axes.seq_len: empty list"},
      {"tile zero",
       head + R"("axes": {"seq_len": [64], "block_c": [64, 0]}, )" + ok_variants + "}",
       {},
       "axes.block_c[1]: must be >= 1"},
      {"wrong type",
       head + R"("axes": {"seq_len": "64"}, )" + ok_variants + "}",
       {},
       "axes.seq_len: expected a positive integer"},
      {"negative",
       head + R"("axes": {"seq_len": [64], "head_dim": [-8]}, )" + ok_variants + "}",
       {},
       "axes.head_dim[0]: must be >= 1"},
      {"unknown format",
       head + ok_axes +
           R"(, "variants": [{"algorithm": "flash2", "policy": {"base": "kernel-bf16", "prob": "fp7"}}]})",
       {},
       "variants[0].policy"},
      {"unknown preset",
       head + ok_axes + R"(, "variants": [{"algorithm": "flash2", "policy": "kernel-bf17"}]})",
       {},
       "variants[0].policy"},
      {"unknown algorithm",
       head + ok_axes + R"(, "variants": [{"algorithm": "flash", "policy": "fp32"}]})",
       {},
       "variants[0].algorithm: unknown algorithm \"flash\""},
      {"no variants", head + ok_axes + R"(, "variants": []})", {}, "variants: empty list"},
      {"two baselines",
       head + ok_axes +
           R"(, "variants": [{"name": "a", "algorithm": "flash2", "policy": "fp32", "baseline": true}, {"name": "b", "algorithm": "baseline", "policy": "fp32", "baseline": true}]})",
       {},
       "variants[1].baseline"},
      {"contradictory constraints",
       head + ok_axes + ", " + ok_variants +
           R"(, "constraints": ["seq_len < 32", "seq_len > 100"]})",
       {},
       "constraints: the constraints exclude every point"},
      {"zip mismatch",
       head +
           R"("axes": {"seq_len": [64, 128], "block_c": [16]}, "zip": [["seq_len", "block_c"]], )" +
           ok_variants + "}",
       {},
       "zip[0][1]: zipped axes must have the same number of values"},
      {"unknown metric",
       head + ok_axes + ", " + ok_variants + R"(, "metrics": ["max_err"]})",
       {},
       "metrics[0]: unknown metric"},
      {"bad trials",
       head + ok_axes + ", " + ok_variants + R"(, "trials": {"count": 2, "seeds": [1]}})",
       {},
       "trials: give either"},
      {"override typo",
       head + ok_axes + ", " + ok_variants + "}",
       {"-a", "seqlen=[128]"},
       "-a seqlen: unknown axis \"seqlen\" (did you mean \"seq_len\"?)"},
      {"override bad tile",
       head + ok_axes + ", " + ok_variants + "}",
       {"-a", "block_r=[0]"},
       "-a block_r[0]: must be >= 1"},
      {"bad shard", head + ok_axes + ", " + ok_variants + "}", {"--shard", "3/3"}, "--shard 3/3"},
      {"shard auto without SLURM",
       head + ok_axes + ", " + ok_variants + "}",
       {"--shard", "auto"},
       "SLURM_ARRAY_TASK_ID is not set"},
  };
  CHECK(cases.size() >= 15);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const fs::path cfg = write_config("bad" + std::to_string(i), c.text);
    const fs::path out = work_dir() / ("bad_out" + std::to_string(i));
    std::vector<std::string> args = {"run", cfg.string(), "-o", out.string()};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Result r = run_cli(args);
    INFO("case " << c.name << "\nconfig: " << c.text << "\nstderr: " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.fragment));
    CHECK_THAT(r.err, Catch::Contains(cfg.string()) || Catch::Contains("--shard"));
    CHECK_FALSE(fs::exists(out));
    if (c.extra.empty() || c.extra[0] == "-a") {
      std::vector<std::string> vargs = {"validate", cfg.string()};
      vargs.insert(vargs.end(), c.extra.begin(), c.extra.end());
      const Result v = run_cli(vargs);
      CHECK(v.code == 2);
      CHECK_THAT(v.err, Catch::Contains(c.fragment));
    }
  }
}

TEST_CASE("validate and plan describe a good config without writing", "[cli][plan]") {
  const fs::path cfg = write_config("small", kSmall);
  const Result v = run_cli({"validate", cfg.string()});
  INFO(v.err);
  CHECK(v.code == 0);
  CHECK_THAT(v.out, Catch::Contains("8 points x 2 variants"));
  const Result p = run_cli({"plan", cfg.string(), "-a", "block_c=[16,32,64]", "--no-estimate"});
  INFO(p.err);
  CHECK(p.code == 0);
  CHECK_THAT(p.out, Catch::Contains("points: 12"));
  CHECK_THAT(p.out, Catch::Contains("GFLOP"));
  const Result e = run_cli({"plan", cfg.string(), "-j", "1"});
  CHECK(e.code == 0);
  CHECK_THAT(e.out, Catch::Contains("estimated time"));
  CHECK_FALSE(fs::exists("results/cli-small"));
}

TEST_CASE("a run killed with SIGKILL mid-sweep resumes to the uninterrupted result",
          "[cli][run][resume]") {
  const fs::path cfg = write_config("long", kLong);
  const fs::path whole = work_dir() / "long_whole", killed = work_dir() / "long_killed";
  const Result full =
      run_cli({"run", cfg.string(), "-o", whole.string(), "-j", "1", "--no-summary"});
  INFO(full.err);
  REQUIRE(full.code == 0);
  const std::map<std::string, json> expected = rows_of(whole / "results.jsonl");
  REQUIRE(expected.size() == 72 * 3);

  const Child child = spawn_cli({"run", cfg.string(), "-o", killed.string(), "-j", "1"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_rows(killed / "results.jsonl") < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(child.pid, SIGKILL);
  const Result k = wait_for(child);
  const std::size_t landed = count_rows(killed / "results.jsonl");
  INFO("rows on disk at the kill: " << landed);
  REQUIRE(k.signal == SIGKILL);  // killed mid-sweep, not after finishing
  REQUIRE(landed >= 6);
  REQUIRE(landed < expected.size());

  const Result resumed =
      run_cli({"run", cfg.string(), "-o", killed.string(), "-j", "1", "--no-summary"});
  INFO(resumed.err);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.out + resumed.err, Catch::Contains("resuming"));  // spdlog writes to stdout
  CHECK(rows_of(killed / "results.jsonl") == expected);
  const std::string csv_killed = slurp(killed / "results.csv"),
                    csv_whole = slurp(whole / "results.csv");
  CHECK(std::count(csv_killed.begin(), csv_killed.end(), '\n') ==
        std::count(csv_whole.begin(), csv_whole.end(), '\n'));
}

TEST_CASE("SIGINT flushes, exits 75, and the rerun completes", "[cli][run][signals]") {
  const fs::path cfg = write_config("long_int", kLong);
  const fs::path dir = work_dir() / "long_int";
  const Child child = spawn_cli({"run", cfg.string(), "-o", dir.string(), "-j", "1"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_rows(dir / "results.jsonl") < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(child.pid, SIGINT);
  const Result r = wait_for(child);
  INFO(r.err);
  REQUIRE(r.code == 75);
  CHECK_THAT(r.out + r.err, Catch::Contains("rerun the same command to resume"));
  const std::size_t landed = count_rows(dir / "results.jsonl");
  CHECK(landed % 3 == 0);  // whole points only
  const Result again =
      run_cli({"run", cfg.string(), "-o", dir.string(), "-j", "1", "--no-summary"});
  CHECK(again.code == 0);
  CHECK(rows_of(dir / "results.jsonl").size() == 72 * 3);
}

TEST_CASE("SIGTERM and SIGHUP are handled like SIGINT: flush, exit 75, the rerun completes",
          "[cli][run][signals]") {
  // SIGTERM: SLURM's warning before a time limit; SIGHUP: the terminal or ssh session closed
  // (unhandled it killed the run with exit 129 and no message).
  for (const int signal : {SIGTERM, SIGHUP}) {
    const std::string name = signal == SIGTERM ? "SIGTERM" : "SIGHUP";
    INFO(name);
    const fs::path cfg = write_config("long_" + name, kLong);
    const fs::path dir = work_dir() / ("long_" + name);
    const Child child = spawn_cli({"run", cfg.string(), "-o", dir.string(), "-j", "1"});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (count_rows(dir / "results.jsonl") < 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::kill(child.pid, signal);
    const Result r = wait_for(child);
    INFO(r.out + r.err);
    CHECK(r.signal == 0);
    REQUIRE(r.code == 75);
    CHECK_THAT(r.out + r.err, Catch::Contains("interrupted by " + name));
    CHECK_THAT(r.out + r.err, Catch::Contains("rerun the same command to resume"));
    CHECK(count_rows(dir / "results.jsonl") % 3 == 0);  // whole points only
    const Result again =
        run_cli({"run", cfg.string(), "-o", dir.string(), "-j", "1", "--no-summary"});
    CHECK(again.code == 0);
    CHECK(rows_of(dir / "results.jsonl").size() == 72 * 3);
  }
}

TEST_CASE("shards from SLURM ids, merge, report and compare", "[cli][shards]") {
  const fs::path cfg = write_config("small_shards", kSmall);
  const fs::path single = work_dir() / "single", sharded = work_dir() / "sharded";
  const Result s = run_cli({"run", cfg.string(), "-o", single.string(), "-j", "1"});
  INFO(s.err);
  REQUIRE(s.code == 0);
  CHECK_THAT(s.out, Catch::Contains("## max_abs"));

  const std::vector<std::string> slurm0 = {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_COUNT=2",
                                           "SLURM_ARRAY_TASK_MIN=0"};
  const Result s0 =
      run_cli({"run", cfg.string(), "-o", sharded.string(), "--shard", "auto", "-j", "1"}, slurm0);
  INFO(s0.err);
  REQUIRE(s0.code == 0);
  CHECK(fs::exists(sharded / "results.shard-0-of-2.jsonl"));
  const Result partial = run_cli({"merge", sharded.string()});
  INFO(partial.out);
  CHECK(partial.code == 1);
  CHECK_THAT(partial.out, Catch::Contains("--array=1 "));
  CHECK_THAT(partial.out, Catch::Contains("--shard auto/2"));
  // The rerun printed by merge: task id 1 of an array that is not 0..N-1.
  const Result s1 =
      run_cli({"run", cfg.string(), "-o", sharded.string(), "--shard", "auto/2", "-j", "1"},
              {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=1", "SLURM_ARRAY_TASK_MIN=1"});
  REQUIRE(s1.code == 0);
  const Result merged = run_cli({"merge", sharded.string()});
  INFO(merged.out);
  CHECK(merged.code == 0);
  CHECK_THAT(merged.out, Catch::Contains("complete"));
  CHECK(rows_of(sharded / "results.jsonl") == rows_of(single / "results.jsonl"));

  const Result cmp =
      run_cli({"compare", single.string(), sharded.string(), "-m", "max_abs", "-m", "rmse"});
  INFO(cmp.out << cmp.err);
  CHECK(cmp.code == 0);
  CHECK_THAT(cmp.out, Catch::Contains("matched 16"));
  // Identical results: every compared value is bit-equal.
  std::istringstream lines(cmp.out);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string metric, compared, identical;
    words >> metric >> compared >> identical;
    if (metric == "max_abs" && compared == "16") {
      found = true;
      CHECK(identical == "16");
    }
  }
  CHECK(found);

  // report rebuilds the tables from the JSONL alone.
  const std::string csv = slurp(single / "results.csv");
  fs::remove(single / "results.csv");
  fs::remove(single / "summary.md");
  const Result rep = run_cli({"report", single.string()});
  CHECK(rep.code == 0);
  CHECK(slurp(single / "results.csv") == csv);
  CHECK(fs::exists(single / "summary.md"));

  // Another config into the same folder is refused, and nothing is touched.
  const Result other = run_cli({"run", cfg.string(), "-o", single.string(), "-a", "seq_len=[48]"});
  CHECK(other.code == 2);
  CHECK_THAT(other.err, Catch::Contains("holds results of another config"));
  CHECK(slurp(single / "results.csv") == csv);
}
