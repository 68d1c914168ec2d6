// One command-line dialect (issue 28, item 6) and empty or out-of-range values refused with the
// option's name (issue 29, row 12), through the attndev binary: the same flag names for the same
// things on every command, config keys as flag names, global flags after the command word.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.hpp"

namespace fs = std::filesystem;
using namespace attndev::test;
using nlohmann::json;

namespace {

// A two-point config at two formats; small enough that a run takes a fraction of a second.
fs::path tiny_config(const std::string& name, const std::string& variants) {
  return write_config(name, R"({"name": ")" + name +
                                R"(", "axes": {"seq_len": [16, 24], "head_dim": 8, "block_c": 8},
                                "variants": )" +
                                variants + "}");
}

const char* kTwoFormats =
    R"([{"name": "b-bf16", "algorithm": "baseline", "policy": "torch-math-bf16"},
        {"name": "f-bf16", "algorithm": "flash2", "policy": "kernel-bf16", "ratio_to": "b-bf16"}])";

json parse_stdout(const Result& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  return json::parse(r.out);
}

// The usage error CLI11 gives a flag the command does not know.
bool unknown_flag(const Result& r) {
  return r.err.find("unknown option") != std::string::npos;
}

}  // namespace

TEST_CASE("every command that takes threads accepts -j and --threads, 0 meaning all",
          "[cli][dialect]") {
  const std::vector<std::string> small = {"--seq-len", "16", "--head-dim", "8"};
  for (const char* flag : {"-j", "--threads"}) {
    for (const char* threads : {"1", "0"}) {
      INFO(flag << " " << threads);
      std::vector<std::string> point = {"point", flag, threads, "--json"};
      point.insert(point.end(), small.begin(), small.end());
      CHECK(parse_stdout(run_cli(point))["point"]["threads"] == std::stoi(threads));
      std::vector<std::string> bench = {"bench", flag, threads, "--repeats", "1", "--json"};
      bench.insert(bench.end(), small.begin(), small.end());
      const Result b = run_cli(bench);
      INFO(b.err);
      CHECK(b.code == 0);
      // match and train stop at their missing files, after the flags were accepted.
      const Result m = run_cli({"match", (work_dir() / "none.npy").string(), "--inputs",
                                (work_dir() / "none").string(), flag, threads});
      INFO(m.err);
      CHECK(m.code == 2);
      CHECK_FALSE(unknown_flag(m));
      CHECK_THAT(m.err, Catch::Contains("none"));
      const Result t = run_cli({"train", (work_dir() / "none.json").string(), flag, threads});
      INFO(t.err);
      CHECK(t.code == 2);
      CHECK_FALSE(unknown_flag(t));
      CHECK_THAT(t.err, !Catch::Contains("not in range"));  // train refused 0 before
      CHECK_THAT(t.err, Catch::Contains("none.json"));
    }
  }
}

TEST_CASE("command-line names equal the config keys and the short ones stay as aliases",
          "[cli][dialect]") {
  const Result long_names = run_cli({"point",
                                     "--algorithm",
                                     "flash1",
                                     "--seq-len",
                                     "20",
                                     "--seq-len-kv",
                                     "12",
                                     "--head-dim",
                                     "8",
                                     "--block-r",
                                     "8",
                                     "--block-c",
                                     "4",
                                     "--distribution",
                                     "uniform(-1,1)",
                                     "--scale-placement",
                                     "query",
                                     "--seed",
                                     "3",
                                     "-j",
                                     "1",
                                     "--json"});
  const Result short_names =
      run_cli({"point",         "--algo",     "flash1", "--n",    "20",   "--n-kv", "12",
               "--d",           "8",          "--br",   "8",      "--bc", "4",      "--dist",
               "uniform(-1,1)", "--scale-on", "query",  "--seed", "3",    "-j",     "1",
               "--json"});
  const json a = parse_stdout(long_names), b = parse_stdout(short_names);
  CHECK(a["point"]["seq_q"] == 20);
  CHECK(a["point"]["seq_kv"] == 12);
  CHECK(a["point"]["block_c"] == 4);
  CHECK(a["point"]["scale_placement"].get<std::string>() == "query");
  CHECK(a["point"]["distribution"].get<std::string>() ==
        b["point"]["distribution"].get<std::string>());
  CHECK(a["variant"]["max_abs"] == b["variant"]["max_abs"]);
  CHECK(a["baseline"]["rmse"] == b["baseline"]["rmse"]);
  // Messages name the long form.
  const Result bad = run_cli({"point", "--n", "0", "--d", "8"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--seq-len must be >= 1, got 0"));
  for (const char* command : {"point", "bench", "match"}) {
    const Result help = run_cli({command, "--help"});
    INFO(command << ": " << help.out);
    CHECK_THAT(help.out, Catch::Contains("--block-c") && Catch::Contains("--algorithm") &&
                             Catch::Contains("-j,--threads"));
  }
}

TEST_CASE("global flags are accepted after the command word", "[cli][dialect]") {
  const fs::path cfg = tiny_config("global_flags", kTwoFormats);
  const Result loud =
      run_cli({"run", cfg.string(), "-o", (work_dir() / "gf1").string(), "-j", "1"});
  INFO(loud.err);
  REQUIRE(loud.code == 0);
  CHECK_THAT(loud.out, Catch::Contains("f-bf16"));  // summary.md on stdout
  const Result quiet =
      run_cli({"run", cfg.string(), "-o", (work_dir() / "gf2").string(), "-j", "1", "-q"});
  INFO(quiet.err);
  CHECK(quiet.code == 0);
  CHECK(quiet.out.empty());  // -q: warnings and errors only, no summary
  CHECK_THAT(quiet.err, !Catch::Contains("points ("));
  const Result verbose = run_cli({"validate", cfg.string(), "-v"});
  CHECK(verbose.code == 0);
  const Result unknown = run_cli({"validate", cfg.string(), "--frobnicate"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("--frobnicate"));
}

TEST_CASE("every command that prints a result takes --json", "[cli][dialect]") {
  const fs::path cfg = tiny_config("json_all", kTwoFormats);
  const fs::path dir = work_dir() / "json_all";
  const json v = parse_stdout(run_cli({"validate", cfg.string(), "--json"}));
  CHECK(v["valid"] == true);
  CHECK(v["points"] == 2);
  CHECK(v["warnings"].empty());
  const json p = parse_stdout(run_cli({"plan", cfg.string(), "--json", "--no-estimate"}));
  CHECK(p["points_total"] == 2);
  CHECK(p["variants"][1]["ratio_to"].get<std::string>() == "b-bf16");
  CHECK(p["points"][0]["id"].get<std::string>().size() == 16);
  REQUIRE(run_cli({"run", cfg.string(), "-o", dir.string(), "-j", "1", "--no-summary"}).code == 0);
  const json r = parse_stdout(run_cli({"report", dir.string(), "--json"}));
  CHECK(r.dump().find("f-bf16") != std::string::npos);
  const json m = parse_stdout(run_cli({"merge", dir.string(), "--json"}));
  CHECK(m["complete"] == true);
  CHECK(m["points_present"] == 2);
  const json c = parse_stdout(run_cli({"compare", dir.string(), dir.string(), "--json"}));
  CHECK(c["matched"] == 4);
  REQUIRE_FALSE(c["metrics"].empty());
  CHECK(c["metrics"][0]["identical"] == c["metrics"][0]["compared"]);
  const json s =
      parse_stdout(run_cli({"slurm", cfg.string(), "--shards", "2", "-o",
                            (work_dir() / "json_slurm").string(), "--json", "--allow-native"}));
  CHECK(s["shards"] == 2);
  CHECK(s["submitted"] == false);
  REQUIRE(s["scripts"].size() == 3);
  CHECK(fs::exists(s["scripts"][0].get<std::string>()));
}

TEST_CASE("run takes --force to write over another config's folder and keeps --force-new",
          "[cli][dialect]") {
  const fs::path a = tiny_config("force_a", kTwoFormats);
  const fs::path b =
      tiny_config("force_b", R"([{"name": "f", "algorithm": "flash2", "policy": "kernel-fp16"}])");
  const fs::path dir = work_dir() / "force";
  REQUIRE(run_cli({"run", a.string(), "-o", dir.string(), "-j", "1", "--no-summary"}).code == 0);
  CHECK(run_cli({"run", b.string(), "-o", dir.string(), "-j", "1", "--no-summary"}).code == 2);
  const Result forced =
      run_cli({"run", b.string(), "-o", dir.string(), "-j", "1", "--no-summary", "--force"});
  INFO(forced.err);
  CHECK(forced.code == 0);
  const Result old_name =
      run_cli({"run", a.string(), "-o", dir.string(), "-j", "1", "--no-summary", "--force-new"});
  INFO(old_name.err);
  CHECK(old_name.code == 0);
  const Result help = run_cli({"run", "--help"});
  CHECK_THAT(help.out, Catch::Contains("--force"));
  CHECK_THAT(help.out, !Catch::Contains("--force-new"));
  CHECK_THAT(help.out, !Catch::Contains("{false}"));  // `!--no-summary` printed its default
  CHECK_THAT(help.out, Catch::Contains("--no-summary"));
}

TEST_CASE("bench --algorithm names flash2-tc and says where it is timed", "[cli][dialect]") {
  const Result help = run_cli({"bench", "--help"});
  CHECK_THAT(help.out, Catch::Contains("flash2-tc") && Catch::Contains("flash3-fp8"));
  const Result tc = run_cli({"bench", "--algorithm", "flash2-tc", "--seq-len", "16"});
  CHECK(tc.code == 2);
  CHECK_THAT(tc.err, Catch::Contains("bench --backend cuda"));
}

TEST_CASE("empty values and seeds that are not 64-bit unsigned are refused with the option's name",
          "[cli][dialect]") {
  const fs::path cfg = tiny_config("empty_values", kTwoFormats);
  struct Bad {
    std::vector<std::string> args;
    const char* option;
    const char* fragment;
  };
  const std::vector<Bad> cases = {
      {{"point", "--seq-len", "16", "--head-dim", "8", "--inputs", ""}, "--inputs", "empty value"},
      {{"point", "--seq-len", "16", "--head-dim", "8", "--dump", ""}, "--dump", "empty value"},
      {{"run", cfg.string(), "-o", ""}, "--out", "empty value"},
      {{"train", cfg.string(), "-o", ""}, "--out", "empty value"},
      {{"slurm", cfg.string(), "--shards", "1", "-o", ""}, "--out", "empty value"},
      {{"match", (work_dir() / "x.npy").string(), "--inputs", ""}, "--inputs", "empty value"},
      {{"point", "--seq-len", "16", "--head-dim", "8", "--seed=-1"}, "--seed", "2^64 - 1"},
      {{"point", "--seq-len", "16", "--head-dim", "8", "--seed", "1e26"}, "--seed", "2^64 - 1"},
      {{"point", "--seq-len", "16", "--head-dim", "8", "--seed", "18446744073709551616"},
       "--seed",
       "2^64 - 1"},
  };
  for (const Bad& bad : cases) {
    const Result r = run_cli(bad.args);
    INFO(bad.args[0] << " " << bad.option << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(bad.option) && Catch::Contains(bad.fragment));
    CHECK(r.out.empty());
  }
  // The largest seed is a seed.
  const json max = parse_stdout(run_cli(
      {"point", "--seq-len", "16", "--head-dim", "8", "--seed", "18446744073709551615", "--json"}));
  CHECK(max["point"]["seed"].get<std::uint64_t>() == 18446744073709551615ULL);
}

TEST_CASE("point says which baseline its ratio divides by", "[cli][dialect]") {
  const Result own = run_cli({"point", "--seq-len", "16", "--head-dim", "8"});
  INFO(own.err);
  REQUIRE(own.code == 0);
  CHECK_THAT(own.out, Catch::Contains("baseline: kernel-bf16 (the variant's own policy"));
  const Result framework = run_cli(
      {"point", "--seq-len", "16", "--head-dim", "8", "--baseline-policy", "torch-math-bf16"});
  REQUIRE(framework.code == 0);
  CHECK_THAT(framework.out, Catch::Contains("baseline: torch-math-bf16 (from --baseline-policy)"));
  const json j = parse_stdout(run_cli({"point", "--seq-len", "16", "--head-dim", "8",
                                       "--baseline-policy", "torch-math-bf16", "--json"}));
  CHECK(j["point"]["baseline_policy_label"].get<std::string>() == "torch-math-bf16");
}

TEST_CASE("validate, plan and run warn when a ratio reference reads another input format",
          "[cli][dialect]") {
  const fs::path mixed =
      tiny_config("mixed_formats",
                  R"([{"name": "b-bf16", "algorithm": "baseline", "policy": "torch-math-bf16"},
          {"name": "f-fp16", "algorithm": "flash2", "policy": "kernel-fp16", "ratio_to": "b-bf16"}])");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"validate", mixed.string()},
        std::vector<std::string>{"plan", mixed.string(), "--no-estimate"},
        std::vector<std::string>{"run", mixed.string(), "-o",
                                 (work_dir() / "mixed_formats").string(), "-j", "1",
                                 "--no-summary"}}) {
    const Result r = run_cli(args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.code == 0);
    CHECK_THAT(r.err, Catch::Contains("warning") &&
                          Catch::Contains("\"f-fp16\" reads fp16 inputs but its ratio reference "
                                          "\"b-bf16\" reads bf16"));
  }
  const Result same = run_cli({"validate", tiny_config("same_formats", kTwoFormats).string()});
  CHECK(same.code == 0);
  CHECK_THAT(same.err, !Catch::Contains("warning"));
}

TEST_CASE("validate, plan and run refuse a quoted placeholder with the variant's path",
          "[cli][dialect]") {
  const fs::path quoted = tiny_config(
      "quoted_placeholder", R"([{"name": "ext", "external": "sh -c 'cp {inputs} {output}'"}])");
  const fs::path dir = work_dir() / "quoted_placeholder";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"validate", quoted.string()},
        std::vector<std::string>{"plan", quoted.string(), "--no-estimate"},
        std::vector<std::string>{"run", quoted.string(), "-o", dir.string(), "--no-summary"}}) {
    const Result r = run_cli(args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("variants[0].external") && Catch::Contains("quotes") &&
                          Catch::Contains("$ATTNDEV_"));
  }
  CHECK_FALSE(fs::exists(dir / "results.jsonl"));
}

TEST_CASE("a format axis runs one variant per format, resuming the hand-written config's points",
          "[cli][dialect]") {
  const fs::path swept = write_config("format_axis", R"({"name": "format_axis",
    "axes": {"seq_len": [16, 24], "head_dim": 8, "block_c": 8, "format": ["bf16", "fp16"]},
    "variants": [
      {"name": "b-{format}", "algorithm": "baseline", "policy": "torch-math-{format}"},
      {"name": "f-{format}", "algorithm": "flash2", "policy": "kernel-{format}",
       "ratio_to": "b-{format}"}]})");
  const json plan = parse_stdout(run_cli({"plan", swept.string(), "--json", "--no-estimate"}));
  REQUIRE(plan["variants"].size() == 4);
  CHECK(plan["variants"][3]["name"].get<std::string>() == "f-fp16");
  CHECK(plan["variants"][3]["ratio_to"].get<std::string>() == "b-fp16");
  const json by_hand = parse_stdout(
      run_cli({"plan", tiny_config("by_hand", kTwoFormats).string(), "--json", "--no-estimate"}));
  CHECK(plan["points"] == by_hand["points"]);  // same ids, axes and seeds
  const fs::path dir = work_dir() / "format_axis";
  const Result run = run_cli(
      {"run", swept.string(), "-o", dir.string(), "-j", "1", "-a", "format=fp16", "--no-summary"});
  INFO(run.err);
  CHECK(run.code == 0);
  const json rows = parse_stdout(run_cli({"report", dir.string(), "--json"}));
  CHECK(rows.dump().find("f-fp16") != std::string::npos);
  CHECK(rows.dump().find("f-bf16") == std::string::npos);
}
