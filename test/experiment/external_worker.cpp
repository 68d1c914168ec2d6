// External variants in worker form (experiment/run/external_worker.hpp): one process per variant
// and run, sent one point at a time. Checked here: the config's worker form and its errors; rows
// bit-identical to the same numpy implementation run as a per-point command; each way a worker can
// go wrong (a crash mid-run, a hang past the timeout, garbage answers, an exit at start, a start
// that never says ready, a failing or skipping function) failing only its own point, with a fresh
// worker computing the next one; resume after a stop and shards unchanged.
//
// The workers are python/attndev/worker.py with scripts/external/numpy_attention.py, and small
// /bin/sh scripts for what a Python worker would never do (garbage). Needs a python3 with numpy;
// without one it exits 77 (ctest: skipped), never passes. Not a catch_discover_tests target
// (test/experiment/extra.cmake): main() is ours.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <string>

#include "catch_run.hpp"
#include "experiment/external_helpers.hpp"
#include "experiment/results/merge.hpp"
#include "experiment/run/external_worker.hpp"
#include "experiment/runner.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
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

std::string source(const std::string& path) {
  return std::string(ATTNDEV_SOURCE_DIR) + "/" + path;
}

// The numpy implementation behind python/attndev/worker.py, with extra arguments.
std::string numpy_worker_command(const std::string& args) {
  return g_python + " " + source("python/attndev/worker.py") + " " +
         source("scripts/external/numpy_attention.py") + ":worker_point" +
         (args.empty() ? "" : " " + args);
}

std::string worker_variant(const std::string& name, const std::string& command,
                           const std::string& extra = "") {
  return R"({"name": ")" + name + R"(", "format": "fp32", "external": {"worker": )" +
         Json(command).dump() + "}" + (extra.empty() ? "" : ", " + extra) + "}";
}

std::string per_point_variant(const std::string& name) {
  return R"({"name": ")" + name + R"(", "format": "fp32", "external": )" +
         Json(g_python + " " + source("scripts/external/numpy_attention.py") +
              " {inputs} {output} --causal {causal}")
             .dump() +
         "}";
}

std::string config_error(const std::string& text) {
  try {
    parse_config(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::map<std::string, Json> rows_by(const std::vector<Json>& rows, const std::string& variant) {
  std::map<std::string, Json> out;
  for (const Json& r : rows)
    if (r["variant"].get<std::string>() == variant) out[r["point_id"].get<std::string>()] = r;
  return out;
}

}  // namespace

TEST_CASE("worker form in the config: parsed, and each mistake named", "[worker][config]") {
  const auto variant = [](const std::string& external, const std::string& extra = "") {
    return R"({"name": "w", "axes": {"seq_len": 16, "head_dim": 8}, "variants": [{"name": "ext", )" +
           extra + R"("external": )" + external + "}]}";
  };
  const Config c =
      parse_config(variant(R"({"worker": "python3 -m attndev.worker m:f"})", R"("timeout": 30, )"));
  REQUIRE(c.variants[0].external);
  CHECK(c.variants[0].external->worker);
  CHECK(c.variants[0].external->command == "python3 -m attndev.worker m:f");
  CHECK(c.variants[0].external->timeout_s == 30);
  CHECK(c.variants[0].external->start_timeout_s == 60);  // a start may take longer than a point
  CHECK_FALSE(c.variants[0].external->tile_dependent);
  const Config tiled = parse_config(variant(R"({"worker": "w m:f", "tiles": true})"));
  CHECK(tiled.variants[0].external->tile_dependent);
  // The per-point form is unchanged: a string, not a worker.
  const Config per_point = parse_config(variant(R"("cmd {inputs} {output}")"));
  CHECK_FALSE(per_point.variants[0].external->worker);

  CHECK_THAT(config_error(variant(R"({"command": "x"})")),
             Catch::Contains("variants[0].external") && Catch::Contains("command"));
  CHECK_THAT(config_error(variant(R"({"tiles": true})")),
             Catch::Contains("variants[0].external.worker: missing") &&
                 Catch::Contains("a per-point command is a string"));
  CHECK_THAT(config_error(variant(R"({"worker": "python3 k.py {inputs}"})")),
             Catch::Contains("variants[0].external.worker") &&
                 Catch::Contains("takes no placeholder ({inputs})"));
  CHECK_THAT(config_error(variant(R"({"worker": ""})")),
             Catch::Contains("variants[0].external.worker: expected a command line"));
  CHECK_THAT(config_error(variant(R"({"worker": "w", "tiles": "yes"})")),
             Catch::Contains("variants[0].external.tiles: expected true"));
  CHECK(parse_config(variant(R"({"worker": "w", "start_timeout": 5})"))
            .variants[0]
            .external->start_timeout_s == 5);
  CHECK_THAT(config_error(variant(R"({"worker": "w", "start_timeout": -1})")),
             Catch::Contains("variants[0].external.start_timeout: expected seconds"));
  CHECK_THAT(config_error(variant("42")),
             Catch::Contains("variants[0].external") && Catch::Contains("{\"worker\": COMMAND}"));
}

TEST_CASE("a worker's rows are bit-identical to the per-point command's, from one process",
          "[worker]") {
  const Config config = parse_config(
      R"({"name": "same", "axes": {"seq_len": [16, 33], "head_dim": 16, "heads": 2,
          "causal": [false, true]},
      "variants": [)" +
      per_point_variant("per-point") + "," +
      worker_variant("worker", numpy_worker_command(""), R"("reference": "per-point")") + "]}");
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 4);
  const fs::path dir = temp_dir("worker_same");
  const int started = workers_started();
  const RunReport report = run_experiment(config, plan, options_for(dir));
  CHECK(workers_started() - started == 1);  // four points, one worker process
  CHECK(report.rows_ok == 8);
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  const auto per_point = rows_by(rows, "per-point"), worker = rows_by(rows, "worker");
  REQUIRE(worker.size() == 4);
  for (const auto& [id, w] : worker) {
    CAPTURE(id);
    const Json& p = per_point.at(id);
    REQUIRE(w["status"] == "ok");
    // Every element of O identical, so every metric against the golden is too.
    CHECK(w["identical_fraction"].get<double>() == 1.0);
    CHECK(w["ref_max_abs"].get<double>() == 0.0);
    for (const char* metric : {"max_abs", "mean_abs", "std_abs", "rmse", "rel_l2", "max_rel"}) {
      REQUIRE(p.contains(metric));
      CHECK(w[metric] == p[metric]);
    }
  }
  end_workers();
  fs::remove_all(dir);
}

TEST_CASE("each way a worker fails is its point's row status, and the next point gets a new worker",
          "[worker]") {
  const std::string garbage =
      R"(echo '{"ready": true}' >&3; while read line; do echo 'this is not json' >&3; done)";
  const std::string config_text =
      R"({"name": "fail", "axes": {"seq_len": [16, 24, 33], "head_dim": 8},
      "variants": [)" +
      worker_variant("crash", numpy_worker_command("--fail crash --fail-at 2")) + "," +
      worker_variant("hang", numpy_worker_command("--fail hang --fail-at 2"), R"("timeout": 3)") +
      "," + worker_variant("garbage", garbage) + "," +
      worker_variant("exit-at-start", "echo 'cannot load the model' >&2; exit 5") + "," +
      worker_variant("skip-at-start", "echo 'no GPU here' >&2; exit 77") + "," +
      worker_variant("no-module", g_python + " " + source("python/attndev/worker.py") +
                                      " no_such_module_h27w:f") +
      "," +
      R"({"name": "never-ready", "external": {"worker": "sleep 60", "start_timeout": 0.5}},)" +
      worker_variant("exit", numpy_worker_command("--fail exit")) + "," +
      worker_variant("skip", numpy_worker_command("--fail skip")) + "," +
      worker_variant("shape", numpy_worker_command("--fail shape")) + "," +
      worker_variant("nan", numpy_worker_command("--fail nan")) + "]}";
  const Config config = parse_config(config_text);
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 3);
  const fs::path dir = temp_dir("worker_fail");
  const RunReport report = run_experiment(config, plan, options_for(dir));
  CHECK(report.ran == 3);
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 3 * 11);
  // The point's position in the sweep (0, 1, 2 by seq_len) and variant -> expected status prefix.
  const std::map<std::string, std::string> every_point = {
      {"garbage",
       "failed: external worker answered garbage to a point (expected {\"id\": 1, \"status\": "
       "\"done\"|\"failed\"|\"skipped\"}): this is not json"},
      {"exit-at-start",
       "failed: external worker exited with status 5 at start: cannot load the model"},
      {"skip-at-start", "skipped: external worker exited with status 77 at start: no GPU here"},
      {"no-module", "failed: external worker exited with status 3 at start: "},
      {"never-ready", "failed: external worker timed out after 0.5 s at start (killed)"},
      {"exit",
       "failed: external worker: the function called sys.exit(3): numpy_attention: refusing on "
       "purpose (--fail exit)"},
      {"skip", "skipped: external worker: numpy_attention: cannot run here (--fail skip)"},
      {"shape", "failed: external output has shape (1, 1, "},
      {"nan", "failed: external output holds "}};
  std::map<std::string, int> seen;
  for (const Json& r : rows) {
    const std::string v = r["variant"], status = r["status"];
    const int position = r["seq_len"].get<int>() == 16 ? 0 : r["seq_len"].get<int>() == 24 ? 1 : 2;
    CAPTURE(v, position, status);
    ++seen[v];
    if (every_point.count(v)) {
      CHECK_THAT(status, Catch::StartsWith(every_point.at(v)));
      if (v == "no-module") CHECK_THAT(status, Catch::Contains("no_such_module_h27w"));
      continue;
    }
    // crash and hang: fine at the first point, failing at the second (the worker's second call),
    // fine again at the third: a new worker, whose first call it is.
    if (position != 1) {
      CHECK(status == "ok");
    } else if (v == "crash") {
      CHECK_THAT(status,
                 Catch::StartsWith("failed: external worker killed by signal 6 (SIGABRT)") &&
                     Catch::Contains("while computing the point"));
    } else {
      CHECK_THAT(status, Catch::StartsWith("failed: external worker timed out after 3 s while "
                                           "computing the point (killed)"));
    }
  }
  CHECK(seen.size() == 11);
  end_workers();
  fs::remove_all(dir);
}

TEST_CASE("worker variants resume after a stop and shard like any other", "[worker]") {
  const std::string text = R"({"name": "resume", "reference": "numpy",
      "axes": {"seq_len": [24, 40], "head_dim": 8, "block_c": [8, 16]},
      "trials": 2,
      "variants": [)" + worker_variant("numpy", numpy_worker_command("")) +
                           R"(, {"name": "flash", "algorithm": "flash2", "policy": "fp32"}]})";
  const Config config = parse_config(text);
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 8);
  const fs::path whole = temp_dir("w_whole"), parts = temp_dir("w_parts"),
                 shards = temp_dir("w_shards");
  run_experiment(config, plan, options_for(whole));
  const std::vector<Json> all = file_rows(whole / "results.jsonl");
  REQUIRE(all.size() == 16);
  for (const Json& r : all) CHECK(r["status"] == "ok");

  RunOptions stopping = options_for(parts);
  int polls = 0;
  // Polled before and after each variant and while a worker computes: stops mid-sweep (8 points
  // poll far more than 12 times whatever their speed).
  stopping.stop_requested = [&polls] { return ++polls > 12; };
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
  end_workers();
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
