// The attribution table (experiment/results/attribution_table.hpp) on rows with exact values:
// what a cell holds, which rows say they cannot change a bit, did not change a metric, or were
// not run, and the config `attndev attribute` builds (experiment/attribution.hpp). The same table
// on a real run is checked end to end in test/cli/test_cli_attribute.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "config/policy_json.hpp"
#include "experiment/attribution.hpp"
#include "experiment/results/attribution_table.hpp"
#include "experiment/spec/config.hpp"

namespace attribution_test {

using attndev::experiment::Attribution;
using attndev::experiment::AttributionRow;
using attndev::experiment::Config;
using attndev::experiment::make_attribution;
using attndev::experiment::parse_config;
using attndev::io::Json;

// flash1 and its baseline under framework-bf16, as is and with score raised (a no-op the table
// must name) and stats raised, at N = 64 and 128, two trials.
Config stage_config(const std::string& stages = R"(["none", "raise:score", "raise:stats"])") {
  return parse_config(R"({"name": "t", "axes": {"seq_len": [64, 128], "stage": )" + stages +
                      R"(}, "trials": 2, "variants": [
    {"name": "f {stage}", "algorithm": "flash1", "policy": "framework-bf16", "stage": "{stage}",
     "ratio_to": "b {stage}"},
    {"name": "b {stage}", "algorithm": "baseline", "policy": "framework-bf16", "stage": "{stage}"}
  ]})");
}

Json row(const std::string& variant, int n, int trial, double max_abs, double ratio = -1) {
  Json r;
  r["record"] = "row";
  r["point_id"] = "p" + std::to_string(n) + "_" + std::to_string(trial);
  r["trial"] = trial;
  r["seed"] = trial;
  r["seq_len"] = n;
  r["head_dim"] = 64;
  r["variant"] = variant;
  r["status"] = "ok";
  r["max_abs"] = max_abs;
  r["rmse"] = max_abs / 4;
  r["worst_index"] = 3;
  if (ratio >= 0) r["ratio_max_abs"] = ratio;
  return r;
}

const AttributionRow& find_row(const Attribution& a, const std::string& spec) {
  REQUIRE(a.groups.size() == 1);
  const auto& rows = a.groups[0].rows;
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const AttributionRow& r) { return r.spec.text() == spec; });
  REQUIRE(it != rows.end());
  return *it;
}

// Both variants of each override at both N and trials: baseline 1 everywhere, flash1 `f(spec,
// n, trial)`.
template <class F>
std::vector<Json> rows_for(const std::vector<std::string>& specs, F f) {
  std::vector<Json> rows;
  for (const std::string& spec : specs)
    for (int n : {64, 128})
      for (int t : {0, 1}) {
        const double v = f(spec, n, t);
        rows.push_back(row("f " + spec, n, t, v, v / 1.0));
        rows.push_back(row("b " + spec, n, t, 1.0));
      }
  return rows;
}

}  // namespace attribution_test

using namespace attribution_test;

TEST_CASE("attribution cells: mean deviation, the reference's, and the mean per-trial ratio",
          "[attribution]") {
  const Config config = stage_config();
  const auto rows =
      rows_for({"none", "raise:score", "raise:stats"}, [](const std::string& spec, int n, int t) {
        return spec == "raise:stats" ? 0.5 + t : (n == 64 ? 2.0 : 4.0);
      });
  const Attribution a = make_attribution(config, rows, "max_abs");
  CHECK(a.columns == std::vector<std::string>{"N=64", "N=128"});
  CHECK(a.groups[0].algorithm == "flash1");
  CHECK(a.groups[0].policy == "framework-bf16");
  CHECK(a.groups[0].reference == "baseline under each row's policy");
  const AttributionRow& stats = find_row(a, "raise:stats");
  REQUIRE(stats.cells.size() == 2);
  CHECK(stats.cells[0].subject == 1.0);  // (0.5 + 1.5) / 2
  CHECK(stats.cells[0].reference == 1.0);
  CHECK(stats.cells[0].ratio == 1.0);
  CHECK(stats.cells[0].ratio_min == 0.5);
  CHECK(stats.cells[0].ratio_max == 1.5);
  CHECK(stats.cells[0].n == 2);
  CHECK(find_row(a, "none").cells[1].subject == 4.0);
  // Rows in table order: as is first, then the raises by stage.
  CHECK(a.groups[0].rows.front().spec.text() == "none");
}

TEST_CASE("attribution: an override that cannot change a bit, or did not, says so",
          "[attribution]") {
  const Config config = stage_config();
  // raise:score gives every metric of the as-is row: the static claim and the measurement.
  auto rows =
      rows_for({"none", "raise:score", "raise:stats"},
               [](const std::string& spec, int, int) { return spec == "raise:stats" ? 0.5 : 2.0; });
  Attribution a = make_attribution(config, rows, "max_abs");
  const std::string score_note = find_row(a, "raise:score").note;
  CHECK(score_note.find("cannot change a bit: score rounds only values of score_accum, which are "
                        "bf16 already") != std::string::npos);
  CHECK(score_note.find("measured: every metric equal to the policy as is") != std::string::npos);
  CHECK(find_row(a, "raise:stats").note.find("measured") == std::string::npos);

  // One trial whose rmse differs: no longer "every metric equal".
  for (Json& r : rows)
    if (r["variant"].get<std::string>() == "f raise:score" &&
        r["point_id"].get<std::string>() == "p128_1")
      r["rmse"] = 0.123;
  a = make_attribution(config, rows, "max_abs");
  CHECK(find_row(a, "raise:score").note.find("measured") == std::string::npos);
  CHECK(find_row(a, "raise:score").note.find("cannot change a bit") != std::string::npos);

  // max_rel may differ (its floor follows the output format) without undoing "equal".
  for (Json& r : rows)
    if (r["point_id"].get<std::string>() == "p128_1") r["rmse"] = 0.5;
  for (Json& r : rows)
    if (r["variant"].get<std::string>() == "f raise:score") r["max_rel"] = 7.0;
  a = make_attribution(config, rows, "max_abs");
  CHECK(find_row(a, "raise:score").note.find("measured") != std::string::npos);
}

TEST_CASE("attribution: every stage of a mode the run has is a row, run or not", "[attribution]") {
  const Config config = stage_config(R"(["none", "raise:stats"])");
  const auto rows =
      rows_for({"none", "raise:stats"}, [](const std::string&, int, int) { return 2.0; });
  const Attribution a = make_attribution(config, rows, "max_abs");
  // as is + the seven raises
  CHECK(a.groups[0].rows.size() == 8);
  const AttributionRow& output = find_row(a, "raise:output");
  CHECK(output.variant.empty());
  CHECK(output.note ==
        "not run; cannot change a bit: output rounds only values of out_accum, "
        "which are bf16 already");
  CHECK(find_row(a, "raise:prob").note.rfind("not run", 0) == 0);
  const std::string md = attndev::experiment::attribution_markdown(a);
  CHECK(md.find("| raise output to fp32 | - | - | not run; cannot change a bit") !=
        std::string::npos);
  CHECK(md.find("## flash1 under framework-bf16") != std::string::npos);
}

TEST_CASE("attribute's config: the overrides of the policy, the reference following each row",
          "[attribution]") {
  attndev::experiment::AttributionRequest r;
  r.algorithm = attndev::attention::Algorithm::flash2;
  r.policy = "kernel-bf16";
  r.parsed_policy = attndev::numerics::find_preset("kernel-bf16")->policy;
  r.axes = {{"seq_len", {64}}};
  const Config config = parse_config(attndev::experiment::attribution_config(r).dump());
  std::vector<std::string> stages;
  for (const auto& v : config.variants)
    if (v.name.rfind("flash2 ", 0) == 0) stages.push_back(v.stage->text());
  // kernel-bf16: input, prob and output are bf16; the rest fp32 (nothing to raise). only:input
  // is left out: the golden sees the same rounded inputs.
  CHECK(stages == std::vector<std::string>{"none", "only:score_accum", "only:score", "only:stats",
                                           "only:prob", "only:out_accum", "only:output",
                                           "raise:input", "raise:prob", "raise:output"});
  REQUIRE(config.variants.size() == 2 * stages.size());
  CHECK(config.variants[0].ratio_to == "baseline none");

  r.reference_policy = "torch-math-bf16";
  const Config fixed = parse_config(attndev::experiment::attribution_config(r).dump());
  CHECK(fixed.variants.back().name == "reference baseline");
  CHECK(fixed.variants.back().policy_label == "torch-math-bf16");

  r.reference_algorithm = "flash2";
  r.reference_policy.reset();
  CHECK_THROWS_AS(attndev::experiment::attribution_config(r), std::invalid_argument);
}
