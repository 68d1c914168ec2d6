// Config validation: every bad config is refused with the JSON path of the problem and a message
// that says how to fix it; good configs parse to the expected typed values.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "experiment/config.hpp"

using namespace attndev::experiment;

namespace {

const char* kGood = R"({
  "name": "t",
  "axes": {"seq_len": [128, 256], "block_c": [32, 64], "distribution": "normal"},
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"algorithm": "flash2", "policy": {"base": "kernel-bf16", "prob": "fp32"}}
  ]
})";

struct BadCase {
  const char* name;
  std::string text;
  std::vector<std::string> overrides;
  const char* path;      // expected ConfigError::path()
  const char* fragment;  // expected in the message
};

std::string with_axes(const std::string& axes) {
  return R"({"name": "t", "axes": )" + axes +
         R"(, "variants": [{"algorithm": "flash2", "policy": "kernel-bf16"}]})";
}
std::string with_variants(const std::string& variants) {
  return R"({"name": "t", "axes": {"seq_len": [128]}, "variants": )" + variants + "}";
}
std::string with_top(const std::string& extra) {
  return R"({"name": "t", "axes": {"seq_len": [128]}, "variants": [{"algorithm": "flash2", "policy": "kernel-bf16"}], )" +
         extra + "}";
}

}  // namespace

TEST_CASE("a good config parses to typed values with defaults filled", "[config]") {
  const Config c = parse_config(kGood);
  CHECK(c.name == "t");
  CHECK(c.axis("seq_len").values.size() == 2);
  CHECK(c.axis("block_r").values == std::vector<nlohmann::json>{64});
  CHECK(c.axis("seq_len_kv").values == std::vector<nlohmann::json>{"seq_len"});
  CHECK(c.axis("distribution").values.front() == "normal(0,1)");
  REQUIRE(c.variants.size() == 2);
  CHECK(c.variants[1].name == "flash2-" + c.variants[1].policy_label);
  CHECK(c.variants[1].policy.prob == attndev::numerics::Format::fp32);
  CHECK(c.ratio_reference(1) == 0);
  CHECK(c.seeds == std::vector<std::uint64_t>{0});
  CHECK(c.hash.size() == 16);
}

TEST_CASE("the config hash ignores key order and whitespace, not values", "[config]") {
  const std::string reordered = R"({"variants": [
      {"baseline": true, "policy": "torch-math-bf16", "algorithm": "baseline", "name": "base"},
      {"policy": {"prob": "fp32", "base": "kernel-bf16"}, "algorithm": "flash2"}],
    "axes": {"distribution": "normal", "block_c": [32, 64], "seq_len": [128, 256]}, "name": "t"})";
  CHECK(parse_config(reordered).hash == parse_config(kGood).hash);
  const std::vector<std::string> o = {"block_c=[32,128]"};
  CHECK(parse_config(kGood, o).hash != parse_config(kGood).hash);
}

TEST_CASE("overrides replace axes, scalars are one-value lists, bare words are strings",
          "[config]") {
  const std::vector<std::string> o = {"seq_len=[512,1024]", "block_c=64",
                                      "distribution=uniform(-1,1)"};
  const Config c = parse_config(kGood, o);
  CHECK(c.axis("seq_len").values == std::vector<nlohmann::json>{512, 1024});
  CHECK(c.axis("block_c").values == std::vector<nlohmann::json>{64});
  CHECK(c.axis("distribution").values.front() == "uniform(-1,1)");
  CHECK(c.axis("seq_len").path == "-a seq_len");
}

TEST_CASE("trials: count, count with first seed, explicit seeds", "[config]") {
  CHECK(parse_config(with_top(R"("trials": 3)")).seeds == std::vector<std::uint64_t>{0, 1, 2});
  CHECK(parse_config(with_top(R"("trials": {"count": 2, "seed": 100})")).seeds ==
        std::vector<std::uint64_t>{100, 101});
  CHECK(parse_config(with_top(R"("trials": {"seeds": [7, 3]})")).seeds ==
        std::vector<std::uint64_t>{7, 3});
}

TEST_CASE("bad configs name the JSON path and the fix", "[config][errors]") {
  const std::vector<BadCase> cases = {
      {"invalid JSON", R"({"name": "t",, })", {}, "", "invalid JSON at line 1"},
      {"not an object", "[1, 2]", {}, "", "JSON object"},
      {"number overflow (found by fuzz_config)",
       R"({"name": "t", "axes": {"seq_len": [1e99999]}})",
       {},
       "",
       "number overflow"},
      {"unknown top key",
       with_top(R"("metrix": ["rmse"])"),
       {},
       "metrix",
       "did you mean \"metrics\""},
      {"unknown axis",
       with_axes(R"({"seq_len": [128], "blok_c": [64]})"),
       {},
       "axes.blok_c",
       "did you mean \"block_c\""},
      {"missing seq_len", with_axes(R"({"head_dim": [64]})"), {}, "axes.seq_len", "no default"},
      {"empty axis", with_axes(R"({"seq_len": []})"), {}, "axes.seq_len", "empty list"},
      {"tile zero",
       with_axes(R"({"seq_len": [128], "block_c": [32, 64, 0]})"),
       {},
       "axes.block_c[2]",
       ">= 1"},
      {"wrong type",
       with_axes(R"({"seq_len": ["long"]})"),
       {},
       "axes.seq_len[0]",
       "positive integer"},
      {"float extent", with_axes(R"({"seq_len": [128.5]})"), {}, "axes.seq_len[0]", "a number"},
      {"huge extent",
       with_axes(R"({"seq_len": [10000000000]})"),
       {},
       "axes.seq_len[0]",
       "must be <="},
      {"duplicate value",
       with_axes(R"({"seq_len": [128, 128]})"),
       {},
       "axes.seq_len[1]",
       "duplicate value"},
      {"bad causal",
       with_axes(R"({"seq_len": [128], "causal": ["yes"]})"),
       {},
       "axes.causal[0]",
       "true or false"},
      {"bad distribution",
       with_axes(R"({"seq_len": [128], "distribution": "gaussian"})"),
       {},
       "axes.distribution",
       "gaussian"},
      {"bad scale placement",
       with_axes(R"({"seq_len": [128], "scale_placement": "score"})"),
       {},
       "axes.scale_placement",
       "did you mean \"scores\""},
      {"unknown format",
       with_variants(
           R"([{"algorithm": "flash2", "policy": {"base": "kernel-bf16", "prob": "fp12"}}])"),
       {},
       "variants[0].policy",
       "fp12"},
      {"unknown preset",
       with_variants(R"([{"algorithm": "flash2", "policy": "kernel-bf61"}])"),
       {},
       "variants[0].policy",
       "kernel-bf"},
      {"unknown algorithm",
       with_variants(R"([{"algorithm": "flash3", "policy": "fp32"}])"),
       {},
       "variants[0].algorithm",
       "unknown algorithm"},
      {"unknown variant key",
       with_variants(R"([{"algorithm": "flash2", "policy": "fp32", "baseline_of": "x"}])"),
       {},
       "variants[0].baseline_of",
       "unknown key"},
      {"no variants", with_variants("[]"), {}, "variants", "at least one variant"},
      {"two baselines",
       with_variants(
           R"([{"algorithm": "flash2", "policy": "fp32", "baseline": true}, {"algorithm": "baseline", "policy": "fp32", "baseline": true}])"),
       {},
       "variants[1].baseline",
       "already the baseline"},
      {"duplicate names",
       with_variants(
           R"([{"algorithm": "flash2", "policy": "fp32"}, {"algorithm": "flash2", "policy": "fp32"}])"),
       {},
       "variants[1].name",
       "duplicate variant name"},
      {"ratio_to unknown",
       with_variants(
           R"([{"name": "a", "algorithm": "flash2", "policy": "fp32", "ratio_to": "bse"}])"),
       {},
       "variants[0].ratio_to",
       "no variant named"},
      {"bad backend",
       with_variants(R"([{"algorithm": "flash2", "policy": "fp32", "backend": "gpu"}])"),
       {},
       "variants[0].backend",
       "valid: cpu, cuda"},
      {"zip length",
       with_top(R"("zip": [["seq_len", "block_c"]])"),
       {"block_c=[16,32]"},
       "zip[0][1]",
       "same number of values"},
      {"zip unknown axis",
       with_top(R"("zip": [["seq_len", "blockc"]])"),
       {},
       "zip[0][1]",
       "did you mean \"block_c\""},
      {"constraint syntax",
       with_top(R"("constraints": ["block_r<=seq_len"])"),
       {},
       "constraints[0]",
       "with spaces"},
      {"constraint axis",
       with_top(R"("constraints": ["block_r <= seqlen"])"),
       {},
       "constraints[0]",
       "did you mean \"seq_len\""},
      {"constraint always false",
       with_top(R"("constraints": ["3 < 2"])"),
       {},
       "constraints[0]",
       "always false"},
      {"bad trials", with_top(R"("trials": 0)"), {}, "trials", ">= 1"},
      {"negative seed",
       with_top(R"("trials": {"seeds": [-1]})"),
       {},
       "trials.seeds[0]",
       "non-negative"},
      {"unknown metric",
       with_top(R"("metrics": ["rmsd"])"),
       {},
       "metrics[0]",
       "did you mean \"rmse\""},
      {"bad name",
       R"({"name": "a/b", "axes": {"seq_len": [1]}, "variants": [{"algorithm": "flash2", "policy": "fp32"}]})",
       {},
       "name",
       "letters, digits"},
      {"bad reference", with_top(R"("reference": "fp32")"), {}, "reference", "golden"},
      {"override unknown axis", kGood, {"seqlen=[1]"}, "-a seqlen", "did you mean \"seq_len\""},
      {"override bad value", kGood, {"block_c=0"}, "-a block_c", ">= 1"},
      {"override syntax", kGood, {"block_c"}, "-a block_c", "AXIS=VALUE"},
  };
  for (const BadCase& c : cases) {
    INFO("case: " << c.name << "\n" << c.text);
    try {
      parse_config(c.text, c.overrides);
      FAIL("accepted a bad config");
    } catch (const ConfigError& e) {
      CHECK(e.path() == c.path);
      CHECK_THAT(e.message(), Catch::Contains(c.fragment));
      CHECK_THAT(std::string(e.what()), Catch::StartsWith(c.path));
    }
  }
  CHECK(cases.size() >= 15);
}
