// The runner end to end on small problems: rows, shared golden/baseline per input set, resume
// after a stop or a torn write, shards + merge equal to one run, CSV equal to JSONL, folder reuse.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "experiment/spec/config.hpp"
#include "experiment/external_helpers.hpp"
#include "experiment/results/merge.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/results/result_row.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/run/dump.hpp"
#include "experiment/runner.hpp"
#include "io/atomic_file.hpp"
#include "io/csv.hpp"
#include "io/jsonl.hpp"
#include "io/safetensors.hpp"

namespace fs = std::filesystem;
using namespace attndev::experiment;
using attndev::io::Json;
using attndev::test::comparable;
using attndev::test::file_rows;
using attndev::test::options_for;
using attndev::test::temp_dir;

namespace {

// Odd sizes hit the tails of the tiling; seeds are fixed (Philox), so every run is replayable.
const char* kConfig = R"({
  "name": "runner-test",
  "axes": {"seq_len": [40, 67], "head_dim": 16, "block_r": [16, 32], "block_c": [16, 32]},
  "zip": [["block_r", "block_c"]],
  "trials": {"seeds": [11, 12]},
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
    {"name": "exact", "algorithm": "baseline", "policy": "fp64", "ratio_to": "flash"},
    {"name": "gpu", "algorithm": "flash2", "policy": "kernel-bf16", "backend": "cuda"}
  ]
})";

}  // namespace

TEST_CASE("a run writes one row per point and variant, sharing golden and baseline per input set",
          "[runner]") {
  const Config config = parse_config(kConfig);
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 8);
  const fs::path dir = temp_dir("basic");
  const RunReport report = run_experiment(config, plan, options_for(dir));
  CHECK(report.ran == 8);
  CHECK(report.rows_ok == 8 * 3);
  CHECK(report.rows_skipped == 8);
  CHECK(report.rows_failed == 0);
  CHECK(report.tables_written);
  for (const char* f : {"results.jsonl", "results.csv", "results.json", "summary.md", "run.json"})
    CHECK(fs::exists(dir / f));

  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 32);
  std::map<std::string, std::vector<Json>> base_by_input;
  for (const Json& r : rows) {
    const std::string v = r["variant"];
    if (v == "gpu") {
      // No device here: either the backend is not built or it finds no usable device.
      CHECK_THAT(r["status"].get<std::string>(), Catch::StartsWith("skipped: "));
      CHECK_FALSE(r.contains("max_abs"));
      continue;
    }
    REQUIRE(r["status"] == "ok");
    CHECK(r["count"] == r["seq_len"].get<int>() * 16);
    if (v == "exact") {
      // The golden is baseline at fp64: the same code at the same precision is bit-identical.
      CHECK(r["max_abs"] == 0.0);
      CHECK(r["ratio_to"] == "flash");
    }
    if (v == "base") {
      CHECK(r["ratio_max_abs"] == 1.0);
      base_by_input[r["seq_len"].dump() + "/" + r["seed"].dump()].push_back(r);
    }
    if (v == "flash") {
      CHECK(r["ratio_to"] == "base");
      CHECK(r["max_abs"].get<double>() > 0);
      CHECK(r.contains("ratio_rmse"));
    }
  }
  // Baseline has no tiles: one computation per input set, identical rows across tile sizes.
  REQUIRE(base_by_input.size() == 4);
  for (const auto& [key, group] : base_by_input) {
    REQUIRE(group.size() == 2);
    CHECK(group[0]["max_abs"] == group[1]["max_abs"]);
    CHECK(group[0]["rmse"] == group[1]["rmse"]);
  }

  SECTION("rerunning resumes: nothing recomputed, nothing duplicated") {
    const RunReport again = run_experiment(config, plan, options_for(dir));
    CHECK(again.already_done == 8);
    CHECK(again.ran == 0);
    CHECK(file_rows(dir / "results.jsonl").size() == 32);
  }
  SECTION("the CSV parses back to the JSONL values") {
    const auto csv = attndev::io::parse_csv(attndev::io::read_file(dir / "results.csv"));
    REQUIRE(csv.size() == rows.size() + 1);
    CHECK(csv[0] == result_columns());
    std::size_t compared = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      REQUIRE(csv[i + 1].size() == result_columns().size());
      for (std::size_t c = 0; c < result_columns().size(); ++c) {
        const std::string& col = result_columns()[c];
        const std::string& cell = csv[i + 1][c];
        if (!rows[i].contains(col)) {
          CHECK(cell.empty());
          continue;
        }
        const Json& v = rows[i][col];
        if (v.is_number_float()) {
          CHECK(std::stod(cell) == v.get<double>());
        } else if (v.is_string()) {
          CHECK(cell == v.get<std::string>());
        } else {
          CHECK(cell == attndev::io::cell_text(v));
        }
        ++compared;
      }
    }
    CHECK(compared > rows.size() * 20);
  }
  SECTION("a folder holding another config is refused unless --force-new") {
    const std::vector<std::string> o = {"seq_len=[40]"};
    const Config other = parse_config(kConfig, o);
    CHECK_THROWS_AS(run_experiment(other, make_plan(other), options_for(dir)), OutputDirError);
    CHECK(file_rows(dir / "results.jsonl").size() == 32);
    RunOptions force = options_for(dir);
    force.force_new = true;
    const RunReport fresh = run_experiment(other, make_plan(other), force);
    CHECK(fresh.ran == 4);
    CHECK(file_rows(dir / "results.jsonl").size() == 16);
  }
  fs::remove_all(dir);
}

TEST_CASE("a stopped run and a torn write resume to the uninterrupted result", "[runner][resume]") {
  const Config config = parse_config(kConfig);
  const Plan plan = make_plan(config);
  const fs::path whole = temp_dir("whole"), parts = temp_dir("parts");
  run_experiment(config, plan, options_for(whole));

  RunOptions stopping = options_for(parts);
  int polls = 0;
  stopping.stop_requested = [&polls] { return ++polls > 10; };  // mid-point: 10 polls = 2.5 points
  const RunReport first = run_experiment(config, plan, stopping);
  CHECK(first.interrupted);
  CHECK(first.ran == 2);
  CHECK(file_rows(parts / "results.jsonl").size() == 8);

  // A SIGKILL during a write leaves part of a point: one full row and a torn line.
  const std::vector<Json> all = file_rows(whole / "results.jsonl");
  {
    std::ofstream out(parts / "results.jsonl", std::ios::app | std::ios::binary);
    out << attndev::io::jsonl_line(all[12]) << "\n"
        << attndev::io::jsonl_line(all[13]).substr(0, 40);
  }
  const RunReport second = run_experiment(config, plan, options_for(parts));
  // The torn line is dropped; the full row of the torn point is kept, and only the variants it
  // lacks are computed (rows are kept per variant).
  CHECK(second.repaired_records == 1);
  CHECK(second.already_done == 2);
  CHECK(second.ran == 6);
  CHECK(comparable(file_rows(parts / "results.jsonl")) == comparable(all));
  fs::remove_all(whole);
  fs::remove_all(parts);
}

TEST_CASE("shards merged equal a single-process run point for point", "[runner][shards]") {
  const Config config = parse_config(kConfig);
  const Plan plan = make_plan(config);
  const fs::path single = temp_dir("single"), sharded = temp_dir("sharded");
  run_experiment(config, plan, options_for(single));
  std::size_t points = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    RunOptions o = options_for(sharded);
    o.shard_index = i;
    o.shard_count = 3;
    const RunReport r = run_experiment(config, plan, o);
    CHECK_FALSE(r.tables_written);
    CHECK(fs::exists(sharded / shard_file_name(i, 3)));
    points += r.ran;
    if (i == 1) {
      // Before the last shard: merge reports what is missing and which shard reruns it.
      const MergeReport partial = merge_results(sharded, {});
      CHECK(partial.points_present == points);
      CHECK(partial.missing_ids.size() == 8 - points);
      CHECK(partial.shard_count == 3);
      CHECK(partial.missing_shards == std::vector<std::size_t>{2});
    }
  }
  CHECK(points == 8);
  // Run shard 0 again into its file: rows duplicated across files must be removed by merge.
  {
    std::ofstream dup(sharded / shard_file_name(1, 3), std::ios::app | std::ios::binary);
    for (const Json& r : file_rows(sharded / shard_file_name(0, 3)))
      dup << attndev::io::jsonl_line(r) << "\n";
  }
  const MergeReport merged = merge_results(sharded, {});
  CHECK(merged.missing_ids.empty());
  CHECK(merged.points_present == 8);
  // The partial merge's results.jsonl and the appended copies both duplicate shard rows.
  CHECK(merged.duplicate_rows >= file_rows(sharded / shard_file_name(0, 3)).size());
  const std::vector<Json> a = file_rows(single / "results.jsonl");
  const std::vector<Json> b = file_rows(sharded / "results.jsonl");
  REQUIRE(a.size() == 32);
  CHECK(comparable(a) == comparable(b));
  // Same order too: merged rows are in plan order.
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i]["point_id"] == b[i]["point_id"]);
  CHECK(attndev::io::read_file(single / "results.csv").size() > 0);
  fs::remove_all(single);
  fs::remove_all(sharded);
}

TEST_CASE("array ranges compress to the sbatch --array form", "[runner][shards]") {
  CHECK(attndev::experiment::array_ranges({0, 1, 2, 3, 5, 7, 8}) == "0-3,5,7-8");
  CHECK(attndev::experiment::array_ranges({4}) == "4");
  CHECK(attndev::experiment::array_ranges({}).empty());
}

TEST_CASE("a flash2-tc variant from a config gives a row, skipped with its reason without a GPU",
          "[runner][cuda]") {
  const Config config = parse_config(R"({"name": "tc", "axes": {"seq_len": 64},
      "variants": [{"algorithm": "flash2-tc", "policy": "kernel-bf16", "backend": "cuda"}]})");
  const fs::path dir = temp_dir("tc");
  run_experiment(config, make_plan(config), options_for(dir));
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["algorithm"] == "flash2-tc");
  const Status s = row_status(rows[0]);
  if (s.is_ok()) {
    CHECK(rows[0].contains("max_abs"));  // a machine with a GPU ran it
  } else {
    CHECK(s.kind == StatusKind::skipped);
    CHECK(s.reason.size() > 10);  // says why: no device, or no CUDA in this build
    CHECK_FALSE(rows[0].contains("max_abs"));
  }
  fs::remove_all(dir);
}

TEST_CASE("reference variants: identical fraction, ulps and |O - O_ref| in the rows",
          "[runner][reference]") {
  const Config config = parse_config(R"({"name": "ref", "reference": "base",
      "axes": {"seq_len": [33, 70], "head_dim": 16, "block_r": 16, "block_c": 16},
      "variants": [
        {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16"},
        {"name": "twin", "algorithm": "baseline", "policy": "torch-math-bf16"},
        {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
        {"name": "exact", "algorithm": "flash2", "policy": "fp64", "reference": "golden"}]})");
  const fs::path dir = temp_dir("ref");
  run_experiment(config, make_plan(config), options_for(dir));
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 8);
  for (const Json& r : rows) {
    const std::string v = r["variant"];
    CAPTURE(v);
    REQUIRE(r["status"] == "ok");
    if (v == "base" || v == "exact") {
      CHECK_FALSE(r.contains("reference"));
      CHECK_FALSE(r.contains("identical_fraction"));
      continue;
    }
    CHECK(r["reference"] == "base");
    if (v == "twin") {
      // The same computation twice: every element bit-identical.
      CHECK(r["identical_fraction"] == 1.0);
      CHECK(r["max_ulp"] == 0);
      CHECK(r["ref_max_abs"] == 0.0);
      CHECK(r["ulp_histogram"] == "0:" + std::to_string(r["count"].get<int>()));
    } else {
      // FA-2 kernel vs the framework's math path: the same attention, other roundings.
      const double f = r["identical_fraction"].get<double>();
      CHECK(f > 0.0);
      CHECK(f < 1.0);
      CHECK(r["max_ulp"].get<int>() >= 1);
      CHECK(r["ref_max_abs"].get<double>() > 0);
      CHECK(r["mean_ulp"].get<double>() > 0);
      // The histogram counts every element.
      long total = 0;
      std::string h = r["ulp_histogram"];
      for (std::size_t pos = h.find(':'); pos != std::string::npos; pos = h.find(':', pos + 1))
        total += std::stol(h.substr(pos + 1));
      CHECK(total == r["count"].get<int>());
    }
  }
  // The CSV has the columns too.
  const std::string csv = attndev::io::read_file(dir / "results.csv");
  CHECK_THAT(csv, Catch::Contains("identical_fraction,max_ulp,mean_ulp,ulp_histogram"));
  fs::remove_all(dir);
}

TEST_CASE("an external variant's dump records its exchange format, not a policy it never ran",
          "[runner][dump]") {
  const attndev::experiment::Variant external = attndev::experiment::parse_variant(
      nlohmann::json::parse(R"({"name": "ext", "external": "run {inputs} {output}",
                                "format": "bf16"})"),
      "variants[0]");
  const fs::path dir = temp_dir("dump_external");
  attndev::experiment::DumpWriter writer{dir, {}, {}};
  attndev::attention::Tensor o(1, 1, 2, 2);
  writer.variant(external, attndev::experiment::Status::ok(), o);
  const auto file = attndev::io::read_safetensors(dir / "ext.safetensors");
  CHECK(file.metadata.at("exchange_format") == "bf16");
  CHECK(file.metadata.at("command") == "run {inputs} {output}");
  CHECK(file.metadata.count("policy") == 0);  // was an all-bf16 policy nobody declared
  CHECK(file.metadata.count("policy_label") == 0);
  fs::remove_all(dir);
}

TEST_CASE(
    "dump writes inputs, golden and outputs, and an inputs axis on the dump reproduces the run",
    "[runner][dump]") {
  const Config config = parse_config(R"j({"name": "dump", "dump": true,
      "axes": {"seq_len": 24, "seq_len_kv": 40, "heads": 2, "head_dim": 8, "block_r": 8,
               "block_c": 16, "distribution": "uniform(-2,2)"},
      "trials": {"seeds": [9]},
      "variants": [
        {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16"},
        {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
        {"name": "f16", "algorithm": "flash1", "policy": "working-fp16"}]})j");
  const Plan plan = make_plan(config);
  REQUIRE(plan.points.size() == 1);
  const fs::path dir = temp_dir("dump");
  run_experiment(config, plan, options_for(dir));
  const fs::path d = dir / "dump" / plan.points[0].id;
  for (const char* f :
       {"inputs-bf16.safetensors", "inputs-fp16.safetensors", "golden-bf16.safetensors",
        "golden-fp16.safetensors", "base.safetensors", "flash.safetensors", "f16.safetensors"})
    CHECK(fs::exists(d / f));
  const auto flash = attndev::io::read_safetensors(d / "flash.safetensors");
  REQUIRE(flash.tensors.size() == 1);
  CHECK(flash.tensors[0].name == "o");
  CHECK(flash.tensors[0].dtype == attndev::io::DType::bf16);
  CHECK(flash.tensors[0].shape == std::vector<std::int64_t>{1, 2, 24, 8});
  CHECK(flash.metadata.at("variant") == "flash");
  CHECK(flash.metadata.at("point_id") == plan.points[0].id);
  CHECK_THAT(flash.metadata.at("policy"), Catch::Contains("\"prob\":\"bf16\""));
  CHECK_THAT(flash.metadata.at("axes"), Catch::Contains("\"block_c\":16"));
  CHECK_THAT(flash.metadata.at("provenance"), Catch::Contains("tool_version"));
  const auto inputs = attndev::io::read_safetensors(d / "inputs-bf16.safetensors");
  REQUIRE(inputs.tensors.size() == 3);
  CHECK(inputs.tensors[1].shape == std::vector<std::int64_t>{1, 2, 40, 8});

  // The dumped bf16 inputs, read back through the inputs axis: the bf16 variants see the same
  // values, so every metric is the same to the last bit.
  const std::string again = R"({"name": "again",
      "axes": {"inputs": ")" +
                            (d / "inputs-bf16.safetensors").string() + R"(",
               "block_r": 8, "block_c": 16},
      "variants": [
        {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16"},
        {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"}]})";
  const Config c2 = parse_config(again);
  const Plan p2 = make_plan(c2);
  REQUIRE(p2.points.size() == 1);
  CHECK(p2.points[0].axes.seq_len == 24);
  CHECK(p2.points[0].axes.seq_len_kv == 40);
  CHECK(p2.points[0].axes.heads == 2);
  const fs::path dir2 = temp_dir("again");
  run_experiment(c2, p2, options_for(dir2));
  const std::vector<Json> first = file_rows(dir / "results.jsonl");
  const std::vector<Json> second = file_rows(dir2 / "results.jsonl");
  REQUIRE(second.size() == 2);
  for (std::size_t v = 0; v < 2; ++v) {
    CAPTURE(v);
    CHECK(second[v]["inputs"] == (d / "inputs-bf16.safetensors").string());
    CHECK_FALSE(second[v].contains("distribution"));
    for (const char* m : {"max_abs", "mean_abs", "rmse", "max_rel", "worst_index", "count"})
      CHECK(second[v][m] == first[v][m]);
  }
  fs::remove_all(dir);
  fs::remove_all(dir2);
}

TEST_CASE("a variant with its own tiles runs with them, once per input set, and its rows say so",
          "[runner]") {
  const Config config = parse_config(R"({"name": "tiles",
      "axes": {"seq_len": 96, "head_dim": 16, "block_r": [16, 32], "block_c": [16, 32]},
      "zip": [["block_r", "block_c"]],
      "variants": [
        {"name": "fixed", "algorithm": "flash2", "policy": "kernel-bf16", "block_r": 8,
         "block_c": 48},
        {"name": "axis", "algorithm": "flash2", "policy": "kernel-bf16"}]})");
  REQUIRE(config.variants[0].block_c == 48);
  CHECK(tile_independent(config.variants[0]));
  CHECK_FALSE(tile_independent(config.variants[1]));
  const fs::path dir = temp_dir("tiles");
  run_experiment(config, make_plan(config), options_for(dir));
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 4);
  // Point 0 (16x16) and point 1 (32x32): "fixed" is the same computation at 8x48 both times.
  CHECK(rows[0]["block_r"] == 8);
  CHECK(rows[0]["block_c"] == 48);
  CHECK(rows[2]["block_c"] == 48);
  CHECK(rows[0]["max_abs"] == rows[2]["max_abs"]);
  CHECK(rows[1]["block_c"] == 16);
  CHECK(rows[3]["block_c"] == 32);
  CHECK(rows[1]["mean_abs"] != rows[0]["mean_abs"]);  // Bc changes the flash2 result
  fs::remove_all(dir);
}

// tflops is a GPU kernel's rate (CUDA events around the launches): a CPU or external row's
// runtime is a wall time, and a rate in the same column would invite the comparison.
TEST_CASE("tflops is written for cuda rows only, from flops and runtime_ms", "[runner]") {
  const Config config = parse_config(kConfig, {});
  const Plan plan = make_plan(config);
  REQUIRE_FALSE(plan.points.empty());
  const Point& point = plan.points.front();
  VariantOutcome outcome;
  outcome.runtime_ms = 2.0;
  Variant variant = config.variants.front();

  variant.backend = Backend::cuda;
  const Json cuda_row = make_row(point, variant, outcome, nullptr);
  REQUIRE(cuda_row.contains("tflops"));
  const double flops = cuda_row["flops"].get<double>();
  REQUIRE(flops > 0);
  CHECK(cuda_row["tflops"].get<double>() == flops / (2.0 * 1e9));
  CHECK(cuda_row["gflops"].get<double>() == flops / (2.0 * 1e6));

  for (Backend b : {Backend::cpu, Backend::external}) {
    variant.backend = b;
    CHECK_FALSE(make_row(point, variant, outcome, nullptr).contains("tflops"));
  }
  variant.backend = Backend::cuda;
  outcome.status = Status::skipped("no device");
  CHECK_FALSE(make_row(point, variant, outcome, nullptr).contains("tflops"));
}
