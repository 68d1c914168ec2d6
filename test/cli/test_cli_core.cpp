// The attndev binary end to end: --version, list, point, and bad invocations that must exit 2 with
// a message that says what is wrong (and print nothing on stdout).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "numerics/format.hpp"
#include "numerics/policy.hpp"
#include "spawn.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using attndev::test::slurp;
using nlohmann::json;

namespace {

struct RunResult {
  int code = -1;
  std::string out, err;
};

// Runs `attndev <args>` through the shell; args are shell words, quoted by the caller.
RunResult run_attndev(const std::string& args) {
  static const fs::path dir = [] {
    const fs::path d =
        fs::temp_directory_path() / ("attndev_cli_core_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  const fs::path out = dir / "stdout", err = dir / "stderr";
  const std::string binary = ATTNDEV_BINARY_DIR + "/apps/attndev/attndev";
  REQUIRE(fs::exists(binary));
  const std::string cmd =
      "'" + binary + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  RunResult r;
  REQUIRE(WIFEXITED(status));
  r.code = WEXITSTATUS(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

json parse_json(const RunResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  return j;
}

}  // namespace

TEST_CASE("attndev --version names the version, revision and compiler", "[cli]") {
  const RunResult r = run_attndev("--version");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("attndev "));
  CHECK_THAT(r.out, Catch::Contains("git "));
}

// The revision is read at build time (cmake/git_revision.cmake): a commit made after configuring
// must show in the next build's provenance (it was fixed at configure time and went stale).
TEST_CASE("attndev --version names the commit the binary was built from", "[cli]") {
  const std::string head_file =
      (fs::temp_directory_path() / ("attndev_head_" + std::to_string(::getpid()))).string();
  const std::string git = "git -C '" + ATTNDEV_SOURCE_DIR + "' rev-parse --short=12 HEAD >'" +
                          head_file + "' 2>/dev/null";
  const bool checkout = std::system(git.c_str()) == 0;
  std::string head = checkout ? slurp(head_file) : "unknown";  // outside git: "unknown"
  fs::remove(head_file);
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  REQUIRE(head.size() == (checkout ? 12u : 7u));
  const RunResult r = run_attndev("--version");
  INFO(r.out << " (rebuild after a commit: the binary must carry the commit it was built from)");
  CHECK_THAT(r.out, Catch::Contains("git " + head));
}

TEST_CASE("attndev list prints every section", "[cli]") {
  const RunResult r = run_attndev("list");
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* needle :
       {"== formats", "fp8-e4m3", "unit roundoff", "== presets", "kernel-bf16", "score_accum",
        "== algorithms", "flash2", "== distributions", "outlier(std,p)", "== backends", "cuda"})
    CHECK_THAT(r.out, Catch::Contains(needle));
  const RunResult one = run_attndev("list backends");
  CHECK(one.code == 0);
  CHECK_THAT(one.out, Catch::Contains("cpu"));
  CHECK_THAT(one.out, !Catch::Contains("fp8-e4m3"));
}

TEST_CASE("attndev list --json is machine-readable and matches the tables", "[cli]") {
  const json j = parse_json(run_attndev("list --json"));
  for (const char* key :
       {"formats", "presets", "algorithms", "distributions", "backends", "provenance"})
    CHECK(j.contains(key));
  REQUIRE(j["formats"].size() == std::size(attndev::numerics::kEveryFormat));
  for (const json& f : j["formats"]) {
    attndev::numerics::Format format;
    REQUIRE(attndev::numerics::parse_format(f["name"].get<std::string>(), format));
    const auto t = attndev::numerics::traits(format);
    CHECK(f["unit_roundoff"].get<double>() == t.unit_roundoff());
    CHECK(f["max"].get<double>() == t.max_finite);
    CHECK(f["bits"].get<int>() == t.storage_bits);
  }
  CHECK(j["presets"].size() == std::size(attndev::numerics::kPolicyPresets));
  CHECK(j["presets"][0]["stages"].contains("score_accum"));
  CHECK(j["algorithms"].size() >= 3);
  bool cpu = false;
  for (const json& b : j["backends"]) cpu = cpu || (b["name"] == "cpu" && b["available"] == true);
  CHECK(cpu);
  const json only = parse_json(run_attndev("list presets --json"));
  CHECK(only.contains("presets"));
  CHECK_FALSE(only.contains("formats"));
}

TEST_CASE("attndev point --json reports both columns with every metric", "[cli]") {
  const json j = parse_json(run_attndev(
      "point --algo flash2 --policy kernel-bf16 --n 37 --n-kv 45 --d 16 --batch 2 --heads 3 "
      "--br 16 --bc 8 --causal --seed 3 --dist 'outlier(10,0.01)' --threads 1 --json"));
  for (const char* key : {"point", "golden", "variant", "baseline", "ratio_to_baseline",
                          "max_rel_floor", "provenance"})
    CHECK(j.contains(key));
  CHECK(j["point"]["algorithm"] == "flash2");
  CHECK(j["point"]["policy"] == "kernel-bf16");
  CHECK(j["point"]["seq_q"] == 37);
  CHECK(j["point"]["seq_kv"] == 45);
  CHECK(j["point"]["causal"] == true);
  CHECK(j["point"]["distribution"] == "outlier(std=10,p=0.01)");
  // Every field of the one provenance builder, as results.json carries them.
  for (const char* key :
       {"tool_version", "git_revision", "compiler", "command_line", "cpu_model", "gpu", "hostname",
        "time_utc", "slurm_job_id", "slurm_array_job_id", "slurm_array_task_id"})
    CHECK(j["provenance"].contains(key));
  CHECK_THAT(j["provenance"]["command_line"].get<std::string>(), Catch::Contains("point --algo"));
  for (const char* side : {"variant", "baseline"}) {
    CAPTURE(side);
    const json& m = j[side];
    CHECK(m["count"] == 2 * 3 * 37 * 16);
    for (const char* key :
         {"max_abs", "mean_abs", "std_abs", "rmse", "rel_l2", "max_rel", "cos_sim", "time_s"}) {
      CAPTURE(key);
      REQUIRE(m[key].is_number());  // a finite kernel gives finite metrics
      CHECK(std::isfinite(m[key].get<double>()));
    }
    CHECK(m["nan_count"] == 0);
    CHECK(m["inf_count"] == 0);
    // bf16 output against an fp64 golden: some error, and the worst element is found.
    CHECK(m["max_abs"].get<double>() > 0);
    CHECK(m["worst_index"].get<std::int64_t>() >= 0);
    CHECK(m["cos_sim"].get<double>() > 0.99);
  }
}

TEST_CASE("bench --json and list --json carry the same provenance fields as point --json",
          "[cli]") {
  const json point = parse_json(run_attndev("point --n 16 --d 8 --json"));
  const json bench =
      parse_json(run_attndev("bench --n 64 --d 16 --algo flash2 --policy fp32 --repeats 1 --json"));
  const json list = parse_json(run_attndev("list --json"));
  std::vector<std::string> keys;
  for (const auto& [key, value] : point["provenance"].items()) keys.push_back(key);
  REQUIRE(keys.size() == 11);
  for (const json* j : {&bench, &list}) {
    std::vector<std::string> other;
    for (const auto& [key, value] : (*j)["provenance"].items()) other.push_back(key);
    CHECK(other == keys);
  }
  CHECK_THAT(bench["provenance"]["command_line"].get<std::string>(), Catch::Contains("bench"));
}

TEST_CASE("attndev point: baseline under fp64 is the golden itself", "[cli]") {
  // The golden is `baseline` with every stage fp64 (docs/CONTRIBUTING.md #2): the same code on the
  // same inputs must agree bit for bit, which makes the metrics path checkable exactly.
  const json j =
      parse_json(run_attndev("point --algo baseline --policy fp64 --n 19 --d 8 --seed 5 --json"));
  CHECK(j["variant"]["max_abs"] == 0.0);
  CHECK(j["variant"]["rmse"] == 0.0);
  CHECK(j["variant"]["cos_sim"] == 1.0);
  CHECK(j["variant"]["count"] == 19 * 8);
  CHECK(j["ratio_to_baseline"]["max_abs"] == 1.0);
}

TEST_CASE("attndev point prints a table with variant, baseline and ratio", "[cli]") {
  const RunResult r = run_attndev(
      "point --algo flash1 --policy working-fp16 --n 24 --d 8 --br 8 "
      "--bc 8 --baseline-policy kernel-fp16");
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* needle :
       {"point: flash1 under working-fp16 vs baseline under kernel-fp16", "max_abs", "rel_l2",
        "cos_sim", "nan/inf", "worst index", "ratio", "time: inputs"})
    CHECK_THAT(r.out, Catch::Contains(needle));
}

TEST_CASE("point runs flash2-tc through the variant runner: refused before anything without a GPU",
          "[cli]") {
  const RunResult cpu = run_attndev("point --algo flash2-tc --n 64 --d 64");
  CHECK(cpu.code == 2);
  CHECK_THAT(cpu.err, Catch::Contains("--backend: \"flash2-tc\" is a CUDA kernel"));
  const RunResult r = run_attndev("point --algo flash2-tc --backend cuda --n 64 --d 64 --json");
  INFO(r.err);
  if (r.code == 0) {
    CHECK(parse_json(r)["point"]["algorithm"] == "flash2-tc (cuda)");  // a machine with a GPU
  } else {
    CHECK(r.code == 2);  // no device (or no CUDA build): nothing computed
    CHECK_THAT(r.err, Catch::Contains("--backend cuda: the cuda backend needs"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("point --dump writes safetensors that --inputs reads back to the same result", "[cli]") {
  const fs::path dir =
      fs::temp_directory_path() / ("attndev_cli_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const json first = parse_json(run_attndev(
      "point --algo flash1 --policy working-bf16 --n 40 --n-kv 24 --heads 2 --d 8 --br 8 --bc 8 "
      "--seed 4 --dist 'uniform(0,1)' --json --dump '" +
      dir.string() + "'"));
  for (const char* f : {"inputs-bf16.safetensors", "golden-bf16.safetensors",
                        "flash1-working-bf16.safetensors", "baseline.safetensors"})
    CHECK(fs::exists(dir / f));
  const json again =
      parse_json(run_attndev("point --algo flash1 --policy working-bf16 --br 8 --bc 8 "
                             "--json --inputs '" +
                             (dir / "inputs-bf16.safetensors").string() + "'"));
  CHECK(again["point"]["seq_q"] == 40);
  CHECK(again["point"]["seq_kv"] == 24);
  CHECK(again["point"]["heads"] == 2);
  CHECK(again["point"]["distribution"] == "file");
  CHECK(again["point"]["seed"].is_null());
  // The text header names the file, not a distribution and seed that drew nothing.
  const std::string file = (dir / "inputs-bf16.safetensors").string();
  const RunResult text = run_attndev(
      "point --algo flash1 --policy working-bf16 --br 8 --bc 8 --inputs '" + file + "'");
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("inputs=" + file));
  CHECK_THAT(text.out, !Catch::Contains("dist=") && !Catch::Contains("seed="));
  const RunResult drawn = run_attndev("point --n 16 --d 8 --seed 4 --dist 'uniform(0,1)'");
  CHECK_THAT(drawn.out, Catch::Contains("dist=uniform(0,1) seed=4"));
  for (const char* side : {"variant", "baseline"})
    for (const char* m : {"max_abs", "mean_abs", "rmse", "worst_index"}) {
      CAPTURE(side, m);
      CHECK(again[side][m] == first[side][m]);
    }
  // Shapes come from the file: shape flags beside --inputs are a mistake.
  const RunResult both =
      run_attndev("point --inputs '" + (dir / "inputs-bf16.safetensors").string() + "' --n 16");
  CHECK(both.code == 2);
  CHECK_THAT(both.err, Catch::Contains("--inputs: the shapes and values come from the file"));
  const RunResult missing =
      run_attndev("point --inputs '" + (dir / "nope.safetensors").string() + "'");
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("no such file"));
  const RunResult one =
      run_attndev("point --inputs '" + (dir / "baseline.safetensors").string() + "'");
  CHECK(one.code == 2);
  CHECK_THAT(one.err, Catch::Contains("holds one tensor; Q, K and V are needed"));
  fs::remove_all(dir);
}

TEST_CASE("match names the kernel and policy that produced a dumped output", "[cli][match]") {
  const fs::path dir =
      fs::temp_directory_path() / ("attndev_cli_match_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // flash2 under kernel-bf16 at Bc 32 over N_kv 96: three K/V tiles, so Bc 16, 32 and 64 give
  // different outputs and only the producer's is bit-identical everywhere.
  REQUIRE(run_attndev("point --algo flash2 --policy kernel-bf16 --n 96 --d 16 --br 16 --bc 32 "
                      "--seed 2 --dump '" +
                      dir.string() + "'")
              .code == 0);
  const std::string inputs = (dir / "inputs-bf16.safetensors").string();
  const std::string kernel = (dir / "flash2-kernel-bf16.safetensors").string();
  const RunResult ran = run_attndev("match '" + kernel + "' --inputs '" + inputs +
                                    "' --bc 16 --bc 32 --bc 64 --bc 128 --threads 1 --json");
  REQUIRE(ran.code == 0);
  const json j = parse_json(ran);
  REQUIRE(j["candidates"].size() > 10);
  CHECK(j["candidates"][0]["candidate"] == "flash2 kernel-bf16 Bc=32");
  CHECK(j["candidates"][0]["identical_fraction"] == 1.0);
  CHECK(j["candidates"][0]["max_ulp"] == 0);
  CHECK(j["candidates"][1]["identical_fraction"] < 1.0);
  CHECK_THAT(j["verdict"].get<std::string>(),
             Catch::Equals("explained exactly by flash2 kernel-bf16 Bc=32: every element "
                           "bit-identical"));
  CHECK(j["provenance"].contains("git_revision"));
  // Bc 128 exceeds N_kv = 96: it runs once, as Bc=96, and the log says so.
  CHECK_THAT(ran.err, Catch::Contains("Bc 128 exceed the sequence (96): one tile, run as Bc=96"));
  std::size_t named_96 = 0;
  for (const json& c : j["candidates"])
    if (c["candidate"] == "flash2 kernel-bf16 Bc=96") ++named_96;
  CHECK(named_96 == 1);

  // flash1 under working-bf16 (O stored in bf16 between K/V tiles) is found the same way.
  REQUIRE(run_attndev("point --algo flash1 --policy working-bf16 --n 48 --d 16 --br 16 --bc 32 "
                      "--seed 2 --dump '" +
                      dir.string() + "'")
              .code == 0);
  const std::string working = (dir / "flash1-working-bf16.safetensors").string();
  // The table form, with the candidates narrowed to one algorithm.
  const RunResult table =
      run_attndev("match '" + working + "' --inputs '" + inputs + "' --bc 32 --algo flash1");
  CHECK(table.code == 0);
  CHECK_THAT(table.out, Catch::Contains("explained exactly by flash1 working-bf16 Bc=32"));
  CHECK_THAT(table.out, Catch::Contains("identical"));
  // Outputs that do not fit the inputs, and missing files, are usage errors.
  const RunResult wrong = run_attndev("match '" + inputs + "' --inputs '" + inputs + "'");
  CHECK(wrong.code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("OUTPUT: "));
  const RunResult missing =
      run_attndev("match '" + (dir / "none.safetensors").string() + "' --inputs '" + inputs + "'");
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("no such file"));
  const RunResult bad_tile = run_attndev("match '" + kernel + "' --inputs '" + inputs + "' --bc 0");
  CHECK(bad_tile.code == 2);
  CHECK_THAT(bad_tile.err, Catch::Contains("--block-c"));  // --bc is its alias
  fs::remove_all(dir);
}

TEST_CASE("bad invocations exit 2 with a message that says what is wrong", "[cli]") {
  struct Bad {
    const char* args;
    const char* fragment;
  };
  const Bad cases[] = {
      {"point --algo flash9 --n 8 --d 4", "unknown algorithm \"flash9\""},
      {"point --algo flahs2 --n 8 --d 4", "did you mean \"flash2\""},
      {"point --policy kernel-bf17 --n 8 --d 4", "unknown policy preset \"kernel-bf17\""},
      {"point --policy '{\"base\":\"kernel-bf16\",\"probs\":\"fp32\"}' --n 8 --d 4",
       "did you mean \"prob\""},
      {"point --policy '{\"base\":\"kernel-bf16\",\"prob\":\"fp33\"}' --n 8 --d 4",
       "unknown format \"fp33\""},
      {"point --policy '{\"base\":' --n 8 --d 4", "not valid JSON"},
      {"point --baseline-policy nope --n 8 --d 4", "--baseline-policy: unknown policy preset"},
      {"point --n 0 --d 4", "--seq-len must be >= 1, got 0"},
      {"point --n 8 --d 0", "--head-dim must be >= 1"},
      {"point --n 8 --d 4 --br 0", "--block-r must be >= 1"},
      {"point --n 8 --d 4 --bc -3", "--block-c must be >= 1, got -3"},
      {"point --n 8 --d 4 --dist 'normal(0,'", "expected ')'"},
      {"point --n 8 --d 4 --dist gauss", "unknown kind \"gauss\""},
      {"point --n 8 --d 4 --dist 'uniform(2,1)'", "lo must be < hi"},
      {"point --n 8 --d 4 --scale-on keys", "unknown placement \"keys\""},
      {"point --n abc --d 4", "--seq-len"},
      {"list formatz", "did you mean \"formats\""},
      {"frobnicate", "unknown command 'frobnicate'"},
  };
  int checked = 0;
  for (const Bad& bad : cases) {
    const RunResult r = run_attndev(bad.args);
    INFO("attndev " << bad.args << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(bad.fragment));
    CHECK(r.out.empty());  // nothing half-written
    ++checked;
  }
  CHECK(checked >= 8);
}
