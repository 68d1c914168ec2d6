// Plan expansion: cartesian product, zip groups, constraints with reasons, trials, overrides,
// stable point ids, shard partition.
#include <catch2/catch.hpp>

#include <numeric>
#include <set>
#include <string>
#include <unordered_set>

#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/spec/stable_hash.hpp"

using namespace attndev::experiment;

namespace {

std::string config_text(const std::string& axes, const std::string& extra = "") {
  return R"({"name": "p", "axes": )" + axes +
         R"(, "variants": [{"algorithm": "flash2", "policy": "fp32"}])" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST_CASE("cartesian product with the last axis fastest and trials outermost", "[plan]") {
  const Plan plan = make_plan(parse_config(
      config_text(R"({"seq_len": [128, 256], "block_c": [16, 32, 64]})", R"("trials": 2)")));
  REQUIRE(plan.points.size() == 2 * 3 * 2);
  CHECK(plan.varying_axes == std::vector<std::string>{"seq_len", "block_c"});
  CHECK(plan.points[0].axes.seq_len == 128);
  CHECK(plan.points[0].axes.block_c == 16);
  CHECK(plan.points[1].axes.block_c == 32);
  CHECK(plan.points[3].axes.seq_len == 256);
  CHECK(plan.points[6].seed == 1);
  CHECK(plan.points[6].trial == 1);
  for (std::size_t i = 0; i < plan.points.size(); ++i) CHECK(plan.points[i].index == i);
  // seq_len_kv defaults to seq_len; tiles do not change the input set.
  CHECK(plan.points[4].axes.seq_len_kv == 256);
  CHECK(plan.points[3].input_key == plan.points[5].input_key);
  CHECK(plan.points[3].input_key != plan.points[0].input_key);
  CHECK(plan.points[3].input_key != plan.points[9].input_key);  // other seed
}

TEST_CASE("zip groups move axes together", "[plan]") {
  const Plan plan = make_plan(parse_config(config_text(
      R"({"seq_len": [128, 256, 512], "block_r": [16, 32, 64], "block_c": [16, 32, 64], "head_dim": [32, 64]})",
      R"("zip": [["block_r", "block_c"]])")));
  REQUIRE(plan.points.size() == 3 * 2 * 3);
  for (const Point& p : plan.points) CHECK(p.axes.block_r == p.axes.block_c);
  std::set<std::pair<int, int>> seen;
  for (const Point& p : plan.points) seen.insert({p.axes.seq_len, p.axes.block_c});
  CHECK(seen.size() == 9);
}

TEST_CASE("constraints skip points and record the reason", "[plan]") {
  const Plan plan = make_plan(parse_config(config_text(
      R"({"seq_len": [32, 64, 128], "block_c": [16, 64, 128]})",
      R"("constraints": [{"require": "block_c <= seq_len", "reason": "tile longer than the sequence"}, "seq_len != 64"])")));
  // Kept: (32,16) (128,16) (128,64) (128,128).
  CHECK(plan.points.size() == 4);
  REQUIRE(plan.skipped.size() == 5);
  int too_long = 0, excluded = 0;
  for (const SkippedPoint& s : plan.skipped) {
    if (s.reason == "tile longer than the sequence") ++too_long;
    if (s.reason == "violates seq_len != 64") ++excluded;
  }
  CHECK(too_long == 3);  // (64,128) violates both: reported under the first
  CHECK(excluded == 2);
}

TEST_CASE("constraints that exclude everything are a config error", "[plan]") {
  const Config c =
      parse_config(config_text(R"({"seq_len": [128], "block_c": [64]})",
                               R"("constraints": ["block_c <= 32", "block_c >= 48"])"));
  CHECK_THROWS_AS(make_plan(c), ConfigError);
  try {
    make_plan(c);
  } catch (const ConfigError& e) {
    CHECK(e.path() == "constraints");
    CHECK_THAT(e.message(), Catch::Contains("exclude every point"));
  }
}

TEST_CASE("point ids are stable under axis reordering and overrides, distinct across points",
          "[plan]") {
  const Plan a =
      make_plan(parse_config(config_text(R"({"seq_len": [128, 256], "causal": [false, true]})")));
  const Plan b =
      make_plan(parse_config(config_text(R"({"causal": [true, false], "seq_len": [256, 128]})")));
  std::set<std::string> ids_a, ids_b;
  for (const Point& p : a.points) ids_a.insert(p.id);
  for (const Point& p : b.points) ids_b.insert(p.id);
  CHECK(ids_a.size() == a.points.size());
  CHECK(ids_a == ids_b);
  // Narrowing an axis on the command line keeps the ids of the points that remain.
  const std::vector<std::string> o = {"seq_len=256"};
  const Plan narrowed = make_plan(
      parse_config(config_text(R"({"seq_len": [128, 256], "causal": [false, true]})"), o));
  REQUIRE(narrowed.points.size() == 2);
  for (const Point& p : narrowed.points) CHECK(ids_a.count(p.id));
}

TEST_CASE("point ids of existing configs do not change (resume of old result folders)", "[plan]") {
  // Ids computed by the version that carried axes as JSON (before typed axes): a results folder
  // written then must resume now. Both a default-heavy point and one with every axis set.
  const Plan a = make_plan(parse_config(config_text(R"({"seq_len": 256})")));
  REQUIRE(a.points.size() == 1);
  CHECK(a.points[0].id == "d090f637620eec9d");
  CHECK(a.points[0].axes.to_json().dump() ==
        R"j({"batch":1,"block_c":64,"block_r":64,"causal":false,"distribution":"normal(0,1)",)j"
        R"j("head_dim":64,"heads":1,"scale_placement":"scores","seq_len":256,"seq_len_kv":256})j");
  const Plan b = make_plan(parse_config(config_text(
      R"j({"seq_len": 100, "seq_len_kv": 37, "batch": 2, "heads": 3, "head_dim": 16,
          "distribution": "uniform(-1,1)", "causal": true, "scale_placement": "query",
          "block_r": 8, "block_c": 16})j",
      R"("trials": {"seeds": [5]})")));
  REQUIRE(b.points.size() == 1);
  CHECK(b.points[0].axes.seq_len_kv == 37);
  CHECK(b.points[0].axes.scale_placement == attndev::attention::ScalePlacement::query);
  CHECK(b.points[0].options().causal);
  CHECK(b.points[0].shape().seq_kv == 37);
  CHECK(b.points[0].describe() ==
        "batch=2 block_c=16 block_r=8 causal=true distribution=uniform(-1,1) head_dim=16 heads=3 "
        "scale_placement=query seq_len=100 seq_len_kv=37 seed=5");
}

TEST_CASE("seq_len_kv resolving to an existing point is reported, not run twice", "[plan]") {
  const Plan plan = make_plan(
      parse_config(config_text(R"({"seq_len": [128], "seq_len_kv": ["seq_len", 128, 256]})")));
  CHECK(plan.points.size() == 2);
  REQUIRE(plan.skipped.size() == 1);
  CHECK_THAT(plan.skipped[0].reason, Catch::Contains("earlier point"));
}

namespace {

// The FLOPs of each shard of `count` under assign_shards.
std::vector<double> shard_loads(const Plan& plan, std::size_t count) {
  std::vector<double> load(count, 0.0);
  const std::vector<std::uint32_t> shard = assign_shards(plan, count);
  REQUIRE(shard.size() == plan.points.size());
  for (const Point& p : plan.points) {
    REQUIRE(shard[p.index] < count);
    load[shard[p.index]] += point_flops(p);
  }
  return load;
}

}  // namespace

TEST_CASE("shards partition the points, balanced by cost and the same on every call", "[plan]") {
  // Issue 38 item 4: by id hash the four shards of a sweep held 299 / 201 / 123 / 128 GFLOP.
  // Point costs here span 256x (seq_len 64..1024, squared) and three trials.
  const Plan plan = make_plan(parse_config(config_text(
      R"({"seq_len": [64, 128, 256, 512, 1024], "block_c": [16, 32, 64], "causal": [false, true]})",
      R"("trials": 3)")));
  double largest_point = 0, total = 0;
  for (const Point& p : plan.points) {
    largest_point = std::max(largest_point, point_flops(p));
    total += point_flops(p);
  }
  for (std::size_t n : {1u, 2u, 3u, 4u, 7u, 16u}) {
    const std::vector<double> load = shard_loads(plan, n);
    const double sum = std::accumulate(load.begin(), load.end(), 0.0);
    CHECK(sum == Approx(total).epsilon(1e-12));  // every point in exactly one shard
    const double mean = sum / static_cast<double>(n);
    const double largest = *std::max_element(load.begin(), load.end());
    INFO("shards " << n << ": largest " << largest << ", mean " << mean << ", largest point "
                   << largest_point);
    CHECK(largest <= std::max(1.10 * mean, largest_point));
    CHECK(assign_shards(plan, n) == assign_shards(plan, n));
  }
  // 4 shards of these 90 points: within 10% of the mean (no single point outweighs that).
  const std::vector<double> four = shard_loads(plan, 4);
  const double mean4 = std::accumulate(four.begin(), four.end(), 0.0) / 4;
  CHECK(*std::max_element(four.begin(), four.end()) <= 1.10 * mean4);
}

TEST_CASE("one point heavier than a shard's share gets a shard to itself", "[plan]") {
  const Plan plan = make_plan(parse_config(config_text(R"({"seq_len": [16, 32, 64, 4096]})")));
  const std::vector<double> load = shard_loads(plan, 2);
  const double heaviest = point_flops(plan.points.back());
  CHECK(*std::max_element(load.begin(), load.end()) == heaviest);
}

TEST_CASE("a plan of a million axis combinations expands (expansion is not quadratic)",
          "[plan][scale]") {
  // 1000 x 1000 combinations, a tenth of the documented limit, half of them skipped by the
  // constraint. Expansion used to compare each combination with every earlier one and never
  // finished at this size.
  std::string values;
  for (int i = 1; i <= 1000; ++i) {
    if (i > 1) values += ',';
    values += std::to_string(i);
  }
  const Plan plan = make_plan(
      parse_config(config_text(R"({"seq_len": [)" + values + R"(], "block_c": [)" + values + "]}",
                               R"("constraints": ["block_c <= seq_len"])")));
  CHECK(plan.points.size() == 500500);
  CHECK(plan.skipped.size() == 499500);
  const Point& last = plan.points.back();
  CHECK(last.axes.seq_len == 1000);
  CHECK(last.axes.block_c == 1000);
  std::unordered_set<std::string> ids;
  for (const Point& p : plan.points) ids.insert(p.id);
  CHECK(ids.size() == plan.points.size());
}

TEST_CASE("one long axis and a long list of seeds validate (duplicate checks are not quadratic)",
          "[plan][scale]") {
  std::string values;
  for (int i = 1; i <= 200000; ++i) {
    if (i > 1) values += ',';
    values += std::to_string(i);
  }
  const Config axis = parse_config(config_text(R"({"seq_len": [)" + values + "]}"));
  CHECK(make_plan(axis).points.size() == 200000);
  const Config seeds =
      parse_config(config_text(R"({"seq_len": [64]})", R"("trials": {"seeds": [)" + values + "]}"));
  CHECK(make_plan(seeds).points.size() == 200000);
  CHECK_THROWS_WITH(parse_config(config_text(R"({"seq_len": [)" + values + ",7]}")),
                    Catch::Contains("duplicate value 7 (also at [6])"));
  CHECK_THROWS_WITH(parse_config(config_text(R"({"seq_len": [64]})",
                                             R"("trials": {"seeds": [)" + values + ",5]}")),
                    Catch::Contains("duplicate seed 5"));
}

TEST_CASE("point ids hash the canonical JSON of the axes and the seed, unchanged across versions",
          "[plan]") {
  // Resume and shards match points by id: an id may never change. These were computed by the
  // JSON-object expansion of attndev 0.1.0 (the trials start at 2^64 - 2).
  const Plan plan = make_plan(parse_config(config_text(
      R"x({"seq_len": [128, 256], "seq_len_kv": ["seq_len", 128], "block_c": [16, 32],
          "causal": [false, true], "distribution": ["normal(0,1)", "uniform(-1,1)"]})x",
      R"("trials": {"count": 2, "seed": 18446744073709551614},
         "constraints": ["block_c <= seq_len_kv"])")));
  REQUIRE(plan.points.size() == 48);
  CHECK(plan.skipped.size() == 8);  // seq_len_kv "seq_len" and 128 coincide at seq_len 128
  CHECK(plan.points[0].id == "71641049e5d4c5f7");
  CHECK(plan.points[16].id == "b094ba99920603c6");
  CHECK(plan.points[47].id == "916ad48ed2de9b22");
  for (const Point& p : plan.points) {
    const nlohmann::json axes = p.axes.to_json();
    CHECK(p.id == stable_hash_hex(nlohmann::json{{"axes", axes}, {"seed", p.seed}}.dump()));
    nlohmann::json input_axes = axes;
    input_axes.erase("block_r");
    input_axes.erase("block_c");
    CHECK(p.input_key ==
          stable_hash_hex(nlohmann::json{{"axes", input_axes}, {"seed", p.seed}}.dump()));
    CHECK(axes.dump() == p.axes.canonical_text());
    CHECK(axes["seq_len_kv"].get<int>() == p.shape().seq_kv);
    CHECK(axes["causal"].get<bool>() == p.options().causal);
    CHECK(axes["distribution"].get<std::string>() == p.axes.distribution.describe());
  }
}

TEST_CASE("a format axis leaves the points and their ids as they were", "[plan]") {
  // The variant axes expand variants only: the same sweep written with one variant per format
  // has the same points, so folders and shards of either resume each other's points.
  const std::string axes = R"("axes": {"seq_len": [128, 256], "block_c": [32, 64])";
  const Plan by_hand =
      make_plan(parse_config(R"({"name": "q", )" + axes + R"(}, "trials": 2, "variants": [
        {"name": "flash2-bf16", "algorithm": "flash2", "policy": "kernel-bf16"},
        {"name": "flash2-fp16", "algorithm": "flash2", "policy": "kernel-fp16"}]})"));
  const Plan swept = make_plan(parse_config(
      R"({"name": "q", )" + axes + R"(, "format": ["bf16", "fp16"]}, "trials": 2, "variants": [
        {"name": "flash2-{format}", "algorithm": "flash2", "policy": "kernel-{format}"}]})"));
  REQUIRE(swept.points.size() == by_hand.points.size());
  for (std::size_t i = 0; i < swept.points.size(); ++i)
    CHECK(swept.points[i].id == by_hand.points[i].id);
  CHECK(swept.varying_axes == by_hand.varying_axes);
}
