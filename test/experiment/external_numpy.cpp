// The external-variant protocol end to end, with a numpy implementation
// (scripts/external/numpy_attention.py) standing in for any kernel outside attndev: rows like an
// emulated variant's, and every way a command can fail (crash, non-zero exit, hang past the
// timeout, wrong shape, NaN, no output, no such command) a clear row status with nothing else of
// the sweep lost; resumable and shardable like any other variant.
//
// Needs a python3 with numpy (Debian's python3-numpy, scripts/setup.sh); without one it exits 77
// (ctest: skipped), never passes. Not a catch_discover_tests target (test/experiment/extra.cmake).
// Catch2's implementation comes from attndev_catch_main (test/catch_session.cpp); main() is ours.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "catch_run.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/external_helpers.hpp"
#include "experiment/results/merge.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/results/result_row.hpp"
#include "experiment/runner.hpp"
#include "io/atomic_file.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using namespace attndev;
using namespace attndev::experiment;
using attndev::io::Json;
using attndev::test::comparable;
using attndev::test::file_rows;
using attndev::test::options_for;
using attndev::test::temp_dir;

namespace {

std::string g_python;  // set by main

std::string script() {
  return std::string(ATTNDEV_SOURCE_DIR) + "/scripts/external/numpy_attention.py";
}

// A variant object running the numpy script with extra arguments, exchanging fp32 unless `extra`
// names its own "format" (a key twice in one object is refused: io/json_strict).
std::string numpy_variant(const std::string& name, const std::string& args,
                          const std::string& extra = "") {
  const bool own_format = extra.find("\"format\"") != std::string::npos;
  return R"({"name": ")" + name + "\"" + (own_format ? "" : R"(, "format": "fp32")") +
         R"(, "external": ")" + g_python + " " + script() + " {inputs} {output} " + args + "\"" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST_CASE("external variants: each failure is a clear row status, nothing else is lost",
          "[external]") {
  const std::string config_text =
      R"({"name": "ext", "reference": "numpy",
      "axes": {"seq_len": 33, "head_dim": 16, "block_r": 16, "block_c": 16,
               "causal": [false, true]},
      "variants": [)" +
      numpy_variant("numpy", "--causal {causal}") +
      R"(,
        {"name": "base", "algorithm": "baseline", "policy": "fp32"},
        {"name": "flash", "algorithm": "flash2", "policy": "fp32"},)" +
      numpy_variant("crash", "--fail crash") + "," + numpy_variant("exit", "--fail exit") + "," +
      numpy_variant("skip", "--fail skip") + "," +
      numpy_variant("hang", "--fail hang", R"("timeout": 0.5)") + "," +
      numpy_variant("shape", "--fail shape") + "," +
      numpy_variant("nan", "--fail nan --causal {causal}") + "," +
      numpy_variant("none", "--fail nooutput") + "," +
      R"({"name": "missing", "external": "no-such-command-xyz {inputs} {output}"}
      ]})";
  const Config config = parse_config(config_text);
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 2);
  const fs::path dir = temp_dir("failures");
  const RunReport report = run_experiment(config, plan, options_for(dir));
  CHECK(report.ran == 2);
  CHECK(report.rows_ok == 2 * 3);
  CHECK(report.rows_failed == 2 * 7);
  CHECK(report.rows_skipped == 2);
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 2 * 11);
  const std::map<std::string, std::string> expected = {
      {"crash", "failed: external command killed by signal 6 (SIGABRT)"},
      {"exit",
       "failed: external command exited with status 3: numpy_attention: refusing on purpose"},
      {"skip", "skipped: external command: numpy_attention: cannot run here"},
      {"hang", "failed: external command timed out after 0.5 s (killed)"},
      {"shape", "failed: external output has shape (1, 1, "},
      {"nan", "failed: external output holds "},
      {"none", "failed: external command exited 0 but wrote no {output} file"},
      {"missing", "failed: external command exited with status 127 (command not found?)"}};
  for (const Json& r : rows) {
    const std::string v = r["variant"];
    CAPTURE(v, r["status"].get<std::string>());
    if (expected.count(v)) {
      CHECK_THAT(r["status"].get<std::string>(), Catch::StartsWith(expected.at(v)));
      if (v == "nan") {
        // The output was read: its NaNs are counted, the metrics say so.
        CHECK(r["nan_count"].get<int>() > 0);
        CHECK(r["max_abs"] == "nan");
      } else {
        CHECK_FALSE(r.contains("max_abs"));
      }
      continue;
    }
    REQUIRE(r["status"] == "ok");
    // numpy in float32 against the FP64 golden: fp32-sized errors, and no NaN.
    CHECK(r["nan_count"] == 0);
    CHECK(r["max_abs"].get<double>() < 1e-5);
    CHECK(r["mean_abs"].get<double>() > 0);
    if (v != "numpy") {
      CHECK(r["reference"] == "numpy");
      CHECK(r["identical_fraction"].get<double>() > 0);
      CHECK(r["ref_max_abs"].get<double>() < 1e-5);
    }
  }
  // The temporary files of the commands are gone; the tables list what was not compared.
  CHECK_FALSE(fs::exists(dir / ".external.0-of-1"));
  const std::string summary = attndev::io::read_file(dir / "summary.md");
  CHECK_THAT(summary, Catch::Contains("## Not compared"));
  CHECK_THAT(summary, Catch::Contains("crash: failed: external command killed by signal 6"));
  fs::remove_all(dir);
}

TEST_CASE("numpy in float64 reproduces the FP64 golden to rounding", "[external]") {
  const Config config = parse_config(
      R"j({"name": "f64", "reference": "golden",
      "axes": {"seq_len": 48, "seq_len_kv": 80, "heads": 2, "head_dim": 8,
               "causal": [false, true], "distribution": "outlier(10,0.05)"},
      "variants": [)j" +
      numpy_variant("numpy64", "--dtype float64 --causal {causal}", R"("format": "fp64")") + "]}");
  const fs::path dir = temp_dir("f64");
  run_experiment(config, make_plan(config), options_for(dir));
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 2);
  for (const Json& r : rows) {
    REQUIRE(r["status"] == "ok");
    CHECK(r["policy"] == "fp64");
    CHECK(r["backend"] == "external");
    CHECK(r["algorithm"] == "external");
    // Same values, another summation order and libm's exp: a few ulps of fp64 at most.
    CHECK(r["max_abs"].get<double>() < 1e-13);
  }
  fs::remove_all(dir);
}

TEST_CASE("an external command runs once per input set unless it takes a tile size", "[external]") {
  const fs::path dir = temp_dir("count");
  fs::create_directories(dir);
  const fs::path once = dir / "once.log", every = dir / "every.log";
  const std::string count_once = "echo x >> " + once.string() + "; ";
  const std::string count_every = "echo x >> " + every.string() + "; ";
  const std::string text = R"({"name": "count",
      "axes": {"seq_len": [32, 40], "head_dim": 8, "block_r": [8, 16], "block_c": [8, 16]},
      "variants": [
        {"name": "untiled", "external": ")" +
                           count_once + g_python + " " + script() +
                           R"( {inputs} {output}"},
        {"name": "tiled", "external": ")" +
                           count_every + g_python + " " + script() +
                           R"( {inputs} {output} # {block_r} {block_c}"}]})";
  const Config config = parse_config(text);
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 8);
  const fs::path out = dir / "out";
  run_experiment(config, plan, options_for(out));
  const auto lines = [](const fs::path& f) {
    std::ifstream in(f);
    int n = 0;
    for (std::string s; std::getline(in, s);) ++n;
    return n;
  };
  CHECK(lines(once) == 2);   // one per input set (seq_len), shared by the four tile pairs
  CHECK(lines(every) == 8);  // one per point
  const std::vector<Json> rows = file_rows(out / "results.jsonl");
  REQUIRE(rows.size() == 16);
  for (const Json& r : rows) CHECK(r["status"] == "ok");
  fs::remove_all(dir);
}

TEST_CASE("external variants resume after a stop and shard like any other", "[external]") {
  const std::string text = R"({"name": "resume", "reference": "numpy",
      "axes": {"seq_len": [24, 40], "head_dim": 8, "block_c": [8, 16]},
      "trials": 2,
      "variants": [)" + numpy_variant("numpy", "") +
                           R"(, {"name": "flash", "algorithm": "flash2", "policy": "fp32"}]})";
  const Config config = parse_config(text);
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 8);
  const fs::path whole = temp_dir("whole"), parts = temp_dir("parts"), shards = temp_dir("shards");
  run_experiment(config, plan, options_for(whole));
  const std::vector<Json> all = file_rows(whole / "results.jsonl");
  REQUIRE(all.size() == 16);

  RunOptions stopping = options_for(parts);
  int polls = 0;
  // Polled before each variant and while the external command runs: stops mid-sweep.
  stopping.stop_requested = [&polls] { return ++polls > 25; };
  const RunReport first = run_experiment(config, plan, stopping);
  CHECK(first.interrupted);
  CHECK(first.ran < 8);
  const RunReport second = run_experiment(config, plan, options_for(parts));
  CHECK(second.already_done == first.ran);
  CHECK(second.ran == 8 - first.ran);
  CHECK(comparable(file_rows(parts / "results.jsonl")) == comparable(all));

  for (std::size_t i = 0; i < 2; ++i) {
    RunOptions o = options_for(shards);
    o.shard_index = i;
    o.shard_count = 2;
    run_experiment(config, plan, o);
  }
  const MergeReport merged = merge_results(shards, {});
  CHECK(merged.missing_ids.empty());
  CHECK(comparable(file_rows(shards / "results.jsonl")) == comparable(all));
  fs::remove_all(whole);
  fs::remove_all(parts);
  fs::remove_all(shards);
}

int main(int argc, char** argv) {
  // The python on PATH may lack numpy (a pyenv, a virtual environment); Debian's has it.
  g_python = attndev::test::find_python({"python3", "/usr/bin/python3"}, "import numpy");
  if (g_python.empty()) {
    std::fprintf(stderr,
                 "SKIPPED: no python3 with numpy (install python3-numpy: scripts/setup.sh)\n");
    return 77;
  }
  std::printf("python: %s\n", g_python.c_str());
  return attndev::test::run_catch_session(argc, argv);
}
