// Config validation: every bad config is refused with the JSON path of the problem and a message
// that says how to fix it; good configs parse to the expected typed values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "experiment/spec/config.hpp"
#include "build_paths.hpp"

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
  // Typed once: integers, the "seq_len" marker, a parsed distribution, the scale placement.
  CHECK(c.axis("block_r").values == std::vector<AxisValue>{64LL});
  CHECK(c.axis("seq_len_kv").values == std::vector<AxisValue>{SameAsSeqLen{}});
  CHECK(std::get<Distribution>(c.axis("distribution").values.front()) == Distribution{});
  CHECK(std::get<attndev::attention::ScalePlacement>(c.axis("scale_placement").values.front()) ==
        attndev::attention::ScalePlacement::scores);
  CHECK(std::get<InputsFile>(c.axis("inputs").values.front()).path.empty());
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
  CHECK(c.axis("seq_len").values == std::vector<AxisValue>{512LL, 1024LL});
  CHECK(c.axis("block_c").values == std::vector<AxisValue>{64LL});
  CHECK(axis_value_json(c.axis("distribution").values.front()) == "uniform(-1,1)");
  CHECK(c.axis("seq_len").path == "-a seq_len");
}

TEST_CASE("flash2-tc is a cuda variant of the flash2 algorithm", "[config]") {
  const Config c = parse_config(
      with_variants(R"([{"algorithm": "flash2-tc", "policy": "kernel-bf16", "backend": "cuda"}])"));
  REQUIRE(c.variants.size() == 1);
  CHECK(c.variants[0].algorithm == attndev::attention::Algorithm::flash2);
  CHECK(c.variants[0].kernel == "flash2-tc");
  CHECK(c.variants[0].backend == Backend::cuda);
  CHECK(c.variants[0].name == "flash2-tc-kernel-bf16-cuda");
  CHECK(variant_algorithm_name(c.variants[0]) == "flash2-tc");
}

TEST_CASE("external variants: command, format, timeout, tile dependence", "[config][external]") {
  const Config c = parse_config(with_variants(R"([
      {"name": "ext", "external": "python3 k.py {inputs} {output} --causal {causal}",
       "format": "bf16", "timeout": 2.5},
      {"name": "tiled", "external": "k {inputs} {output} {block_r} {block_c}", "reference": "ext"}
    ])"));
  REQUIRE(c.variants.size() == 2);
  const Variant& e = c.variants[0];
  CHECK(e.backend == Backend::external);
  REQUIRE(e.external);
  CHECK(e.external->timeout_s == 2.5);
  CHECK_FALSE(e.external->tile_dependent);
  CHECK(e.policy.input == attndev::numerics::Format::bf16);
  CHECK(e.policy.output == attndev::numerics::Format::bf16);
  CHECK(e.policy_label == "bf16");
  CHECK(variant_algorithm_name(e) == "external");
  CHECK(c.variants[1].external->tile_dependent);
  CHECK(c.variants[1].policy.output == attndev::numerics::Format::fp32);  // the default format
  CHECK(c.output_reference(1) == 0);
  CHECK(c.output_reference(0) == -1);
}

TEST_CASE("reference: golden by default, a variant for all, or per variant",
          "[config][reference]") {
  const std::string variants = R"([
      {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16"},
      {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
      {"name": "f32", "algorithm": "flash2", "policy": "fp32", "reference": "golden"}])";
  const Config none = parse_config(with_variants(variants));
  for (std::size_t v = 0; v < 3; ++v) CHECK(none.output_reference(v) == -1);
  const std::string with_reference = R"({"name": "t", "axes": {"seq_len": 8}, "reference": "base",
      "variants": )" + variants + "}";
  const Config all = parse_config(with_reference);
  CHECK(all.output_reference(0) == -1);  // the reference itself
  CHECK(all.output_reference(1) == 0);
  CHECK(all.output_reference(2) == -1);  // its own "golden" wins
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
      {"flash2-tc without the cuda backend",
       with_variants(R"([{"algorithm": "flash2-tc", "policy": "kernel-bf16"}])"),
       {},
       "variants[0].backend",
       "is a CUDA kernel"},
      {"external without {inputs}",
       with_variants(R"([{"name": "x", "external": "run.sh {output}"}])"),
       {},
       "variants[0].external",
       "must name the {inputs} file"},
      {"external unknown placeholder",
       with_variants(R"([{"name": "x", "external": "run {inputs} {output} {block}"}])"),
       {},
       "variants[0].external",
       "unknown placeholder {block}"},
      {"external unclosed placeholder",
       with_variants(R"([{"name": "x", "external": "run {inputs} {output"}])"),
       {},
       "variants[0].external",
       "unclosed '{'"},
      {"external without a name",
       with_variants(R"([{"external": "run {inputs} {output}"}])"),
       {},
       "variants[0].name",
       "needs a name"},
      {"external with a policy",
       with_variants(R"([{"name": "x", "external": "run {inputs} {output}", "policy": "fp32"}])"),
       {},
       "variants[0].policy",
       "unknown key \"policy\""},
      {"external format without a tensor dtype",
       with_variants(
           R"([{"name": "x", "external": "run {inputs} {output}", "format": "fp8-e4m3"}])"),
       {},
       "variants[0].format",
       "cannot be exchanged"},
      {"external timeout",
       with_variants(R"([{"name": "x", "external": "run {inputs} {output}", "timeout": 0}])"),
       {},
       "variants[0].timeout",
       "seconds"},
      {"variant named golden",
       with_variants(R"([{"name": "golden", "algorithm": "flash2", "policy": "fp32"}])"),
       {},
       "variants[0].name",
       "names the FP64 golden"},
      {"variant reference names nothing",
       with_variants(R"([{"algorithm": "flash2", "policy": "fp32", "reference": "base"}])"),
       {},
       "variants[0].reference",
       "no variant named \"base\""},
      {"inputs file and a shape axis",
       with_axes(R"({"inputs": "q.safetensors", "seq_len": [64]})"),
       {},
       "axes.seq_len",
       "comes from the inputs file"},
      {"inputs file and several trials",
       R"({"name": "t", "axes": {"inputs": "q.safetensors"}, "trials": 2,
           "variants": [{"algorithm": "flash2", "policy": "fp32"}]})",
       {},
       "trials",
       "use one trial"},
      {"variant tile not positive",
       with_variants(R"([{"algorithm": "flash2", "policy": "fp32", "block_c": 0}])"),
       {},
       "variants[0].block_c",
       ">= 1"},
      {"dump not a boolean", with_top(R"("dump": "yes")"), {}, "dump", "true or false"},
      {"override unknown axis", kGood, {"seqlen=[1]"}, "-a seqlen", "did you mean \"seq_len\""},
      {"override bad value", kGood, {"block_c=0"}, "-a block_c", ">= 1"},
      {"override syntax", kGood, {"block_c"}, "-a block_c", "AXIS=VALUE"},
      // Found by fuzz_config: a bare word with invalid UTF-8 became a JSON string that threw
      // json type_error 316 when an error message printed it (terminate; exit 1 from the CLI).
      {"override not UTF-8 (found by fuzz_config)",
       kGood,
       {"seq_len=[\xa3]x"},
       "-a seq_len",
       "not valid UTF-8"},
      {"override bare word not UTF-8",
       kGood,
       {"distribution=\xa3"},
       "-a distribution",
       "not valid UTF-8"},
      // `run` could not create results/<name> for a name longer than a folder name may be.
      {"name longer than a folder name",
       R"({"name": ")" + std::string(300, 'n') + R"("})",
       {},
       "name",
       "300 characters; at most 128"},
      {"seed wraps past 2^64 - 1",
       with_top(R"("trials": {"count": 3, "seed": 18446744073709551615})"),
       {},
       "trials.seed",
       "use a seed of at most 18446744073709551613"},
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

TEST_CASE("Golden et al. Fig. 3 compares each flash variant with the baseline of its format",
          "[config][papers]") {
  // The figure plots max |O_flash - O_baseline| at each format: each flash variant's reference
  // (the ref_max_abs column) must be the baseline variant of the same format, not the golden.
  std::ifstream in(ATTNDEV_SOURCE_DIR + "/configs/paper/golden2024-fig3-formats.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const Config c = parse_config(text.str());
  std::size_t flash = 0;
  for (std::size_t v = 0; v < c.variants.size(); ++v) {
    const Variant& x = c.variants[v];
    CAPTURE(x.name);
    if (x.algorithm == attndev::attention::Algorithm::baseline) {
      CHECK(c.output_reference(v) == -1);
      continue;
    }
    ++flash;
    const int ref = c.output_reference(v);
    REQUIRE(ref >= 0);
    const Variant& r = c.variants[static_cast<std::size_t>(ref)];
    CHECK(r.algorithm == attndev::attention::Algorithm::baseline);
    CHECK(r.policy.output == x.policy.output);
  }
  CHECK(flash == 8);
  CHECK(std::find(c.metrics.begin(), c.metrics.end(), "ref_max_abs") != c.metrics.end());
}

namespace {

// The quickstart's six variants written by hand, and the same config with a `format` axis: one
// template per algorithm instead of one variant per combination.
const char* kByHand = R"({"name": "q", "axes": {"seq_len": [256, 512], "block_c": [32, 64]},
  "variants": [
    {"name": "baseline-bf16", "algorithm": "baseline", "policy": "torch-math-bf16"},
    {"name": "baseline-fp16", "algorithm": "baseline", "policy": "torch-math-fp16"},
    {"name": "flash2-bf16", "algorithm": "flash2", "policy": "kernel-bf16", "ratio_to": "baseline-bf16"},
    {"name": "flash2-fp16", "algorithm": "flash2", "policy": "kernel-fp16", "ratio_to": "baseline-fp16"}]})";
const char* kFormatAxis = R"({"name": "q",
  "axes": {"seq_len": [256, 512], "block_c": [32, 64], "format": ["bf16", "fp16"]},
  "variants": [
    {"name": "baseline-{format}", "algorithm": "baseline", "policy": "torch-math-{format}"},
    {"name": "flash2-{format}", "algorithm": "flash2", "policy": "kernel-{format}",
     "ratio_to": "baseline-{format}"}]})";

}  // namespace

TEST_CASE("a format axis makes one copy of each variant that names {format}", "[config]") {
  const Config by_hand = parse_config(kByHand);
  const Config swept = parse_config(kFormatAxis);
  REQUIRE(swept.variants.size() == by_hand.variants.size());
  for (std::size_t i = 0; i < swept.variants.size(); ++i) {
    INFO(by_hand.variants[i].name);
    CHECK(swept.variants[i].name == by_hand.variants[i].name);
    CHECK(swept.variants[i].policy_label == by_hand.variants[i].policy_label);
    CHECK(swept.variants[i].policy == by_hand.variants[i].policy);
    CHECK(swept.variants[i].ratio_to == by_hand.variants[i].ratio_to);
    CHECK(swept.ratio_reference(i) == by_hand.ratio_reference(i));
  }
  REQUIRE(swept.variant_axes.size() == 1);
  CHECK(swept.variant_axes[0].first == "format");
  // The axis is in the config (and its hash), not in the points.
  CHECK(swept.hash != by_hand.hash);
  CHECK(swept.axes.size() == by_hand.axes.size());

  // -a format=... narrows it like any other axis.
  const Config fp16 = parse_config(kFormatAxis, std::vector<std::string>{"format=fp16"});
  REQUIRE(fp16.variants.size() == 2);
  CHECK(fp16.variants[0].name == "baseline-fp16");
  CHECK(fp16.variants[1].ratio_to == "baseline-fp16");
}

TEST_CASE("a policy axis sweeps presets, crossed with a format axis where both are named",
          "[config]") {
  const Config c = parse_config(R"({"name": "p",
    "axes": {"seq_len": [64], "policy": ["kernel-bf16", "framework-bf16"], "format": ["fp32"]},
    "variants": [
      {"name": "flash2-{policy}", "algorithm": "flash2", "policy": "{policy}"},
      {"name": "b-{policy}-{format}", "algorithm": "baseline",
       "policy": {"base": "{policy}", "output": "{format}"}}]})");
  REQUIRE(c.variants.size() == 4);
  CHECK(c.variants[0].name == "flash2-kernel-bf16");
  CHECK(c.variants[1].name == "flash2-framework-bf16");
  CHECK(c.variants[1].policy_label == "framework-bf16");
  CHECK(c.variants[2].name == "b-kernel-bf16-fp32");
  CHECK(c.variants[3].policy.output == attndev::numerics::Format::fp32);
}

TEST_CASE("an external command's {format} stays the exchange format, not a variant axis",
          "[config]") {
  // Without axes.format this config was valid before variant axes existed and must stay so.
  const Config c = parse_config(with_variants(
      R"([{"name": "ext", "external": "cmd {inputs} {output} {format}", "format": "bf16"}])"));
  REQUIRE(c.variants.size() == 1);
  CHECK(c.variants[0].external->command == "cmd {inputs} {output} {format}");
  // With the axis, the variant's `format` is swept and the command keeps its placeholder.
  const Config swept =
      parse_config(R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16", "fp16"]},
    "variants": [{"name": "ext-{format}", "external": "cmd {inputs} {output} {format}",
                  "format": "{format}"}]})");
  REQUIRE(swept.variants.size() == 2);
  CHECK(swept.variants[1].policy.input == attndev::numerics::Format::fp16);
  CHECK(swept.variants[1].external->command == "cmd {inputs} {output} {format}");
}

TEST_CASE("variant axes are refused with the path and the fix when they cannot work", "[config]") {
  const std::string flash =
      R"("variants": [{"name": "f-{format}", "algorithm": "flash2", "policy": "kernel-{format}"}]})";
  const std::vector<BadCase> cases = {
      {"unknown format",
       R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16", "bf61"]}, )" + flash,
       {},
       "axes.format[1]",
       "did you mean \"bf16\""},
      {"duplicate format",
       R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16", "bf16"]}, )" + flash,
       {},
       "axes.format[1]",
       "duplicate value"},
      {"a placeholder without its axis",
       R"({"name": "t", "axes": {"seq_len": [8]}, )" + flash,
       {},
       "variants[0]",
       "no axis \"format\""},
      {"an axis no variant names",
       with_axes(R"({"seq_len": [8], "format": ["bf16"]})"),
       {},
       "axes.format",
       "no variant names {format}"},
      {"a name that does not tell the copies apart",
       R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16", "fp16"]},
          "variants": [{"name": "f", "algorithm": "flash2", "policy": "kernel-{format}"}]})",
       {},
       "variants[0].name",
       "\"f-{format}\""},
      {"a preset the substitution does not make",
       R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16", "fp32"]}, )" + flash,
       {},
       "variants[0][format=fp32].policy",
       "kernel-fp32"},
      {"a zipped variant axis",
       R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16"]}, "zip": [["seq_len", "format"]], )" +
           flash,
       {},
       "zip[0][1]",
       "cannot be zipped"},
      {"an empty -a value list",
       R"({"name": "t", "axes": {"seq_len": [8], "format": ["bf16"]}, )" + flash,
       {"format=[]"},
       "-a format",
       "empty list"},
  };
  for (const BadCase& c : cases) {
    INFO("case: " << c.name << "\n" << c.text);
    try {
      parse_config(c.text, c.overrides);
      FAIL("accepted a bad config");
    } catch (const ConfigError& e) {
      CHECK(e.path() == c.path);
      CHECK_THAT(e.message(), Catch::Contains(c.fragment));
    }
  }
}

TEST_CASE("a ratio reference with another input format is a warning, not an error", "[config]") {
  // Mixed on purpose (fp16 flash over a bf16 baseline): valid, but said.
  const Config mixed = parse_config(with_variants(
      R"([{"name": "b", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
          {"name": "f", "algorithm": "flash2", "policy": "kernel-fp16"}])"));
  const std::vector<std::string> w = config_warnings(mixed);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::Contains("\"f\" reads fp16 inputs") &&
                       Catch::Contains("ratio reference \"b\" reads bf16"));
  CHECK(config_warnings(parse_config(kByHand)).empty());
  CHECK(config_warnings(parse_config(kGood)).empty());
}
