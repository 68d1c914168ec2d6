// `attndev train` end to end: the quick study writes every promised file with real rows, and bad
// input exits 2 with a message and leaves no output folder behind.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/csv.hpp"
#include "io/safetensors.hpp"
#include "files.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using attndev::test::slurp;

namespace {

struct Result {
  int code = -1;
  std::string err;
  std::string out;
};

const fs::path& scratch() {
  static const fs::path d =
      fs::temp_directory_path() / ("attndev_cmd_train_" + std::to_string(::getpid()));
  return d;
}

Result run_attndev(const std::string& args) {
  fs::create_directories(scratch());
  const std::string binary = ATTNDEV_BINARY_DIR + "/apps/attndev/attndev";
  REQUIRE(fs::exists(binary));
  const fs::path err = scratch() / "stderr";
  const fs::path out = scratch() / "stdout";
  const std::string cmd =
      "'" + binary + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), slurp(err), slurp(out)};
}

const std::string kStudy = ATTNDEV_SOURCE_DIR + "/configs/paper/golden2024-fig7-8-weights.json";

}  // namespace

TEST_CASE("attndev train --quick runs the weight study end to end", "[train][cli]") {
  const fs::path out = scratch() / "quick";
  fs::remove_all(out);
  // Falls back to a base-files text when fortunes-min is not installed (see test_training.cpp).
  const bool have_corpus = fs::exists("/usr/share/games/fortunes/fortunes");
  if (!have_corpus) WARN("fortunes-min missing: training the CLI test on GPL-3");
  const Result r = run_attndev("train '" + kStudy + "' --quick -j 2 -o '" + out.string() + "'" +
                               (have_corpus ? "" : " --text /usr/share/common-licenses/GPL-3"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  // The quick form keeps the full form's 3 replicates: rep0..rep2, each with every run.
  for (const char* f :
       {"summary.md", "weights_comparison.csv", "ratios.csv", "ratio_stats.csv", "pair_stats.csv",
        "in_model.csv", "study.json", "rep0/flash2-bf16-s1/loss.csv",
        "rep2/baseline-fp16-s1/run.json", "rep1/flash2-bf16-s1/in_model.csv"})
    CHECK(fs::exists(out / f));
  const auto rows = attndev::io::parse_csv(slurp(out / "weights_comparison.csv"));
  REQUIRE(rows.size() > 1);
  REQUIRE(rows[0].size() == 11);
  CHECK(rows[0][1] == "replicate");
  std::map<std::string, int> flash_all;  // replicate -> rows
  std::set<std::string> seeds;
  for (const auto& row : rows)
    if (row.size() == 11 && row[2] == "flash" && row[8] == "all") {
      ++flash_all[row[1]];
      seeds.insert(row[6]);
      // Identical inits at step 0; afterwards the two attention algorithms must have diverged.
      if (row[0] == "0")
        CHECK(std::stod(row[9]) == 0.0);
      else
        CHECK(std::stod(row[9]) > 0.0);
    }
  CHECK(flash_all == std::map<std::string, int>{{"0", 4}, {"1", 4}, {"2", 4}});  // steps 0..30
  CHECK(seeds == std::set<std::string>{"1", "1001", "2001"});  // a fresh seed per replicate
  // Ratios over replicates: 3 finite values at steps 10, 20, 30; none at step 0 (0/0).
  const auto stats = attndev::io::parse_csv(slurp(out / "ratio_stats.csv"));
  int pooled = 0;
  for (const auto& row : stats)
    if (row.size() == 8 && row[1] == "bf16-vs-fp32 / flash" && row[2] == "all") {
      ++pooled;
      CHECK(row[3] == (row[0] == "0" ? "0" : "3"));
      if (row[0] != "0") {
        CHECK(std::stod(row[6]) <= std::stod(row[4]));  // min <= mean <= max
        CHECK(std::stod(row[4]) <= std::stod(row[7]));
        CHECK(std::stod(row[5]) > 0.0);  // replicates differ
      }
    }
  CHECK(pooled == 4);
  const std::string summary = slurp(out / "summary.md");
  CHECK_THAT(summary, Catch::Contains("Replicates: 3") && Catch::Contains(" ± ") &&
                          Catch::Contains("In-model deviation"));
  const auto snap =
      attndev::io::read_safetensors(out / "rep0/flash2-bf16-s1/snapshots/step_000030.safetensors");
  CHECK(snap.tensors.size() == 2 + 12 + 3);  // embeddings, one block, ln_f + head
  CHECK(snap.metadata.at("algorithm") == "flash2");
  fs::remove_all(scratch());
}

TEST_CASE("attndev train --capture writes each layer's Q, K, V beside in_model.csv",
          "[train][cli]") {
  const fs::path out = scratch() / "capture";
  fs::remove_all(out);
  const bool have_corpus = fs::exists("/usr/share/games/fortunes/fortunes");
  const Result r = run_attndev("train '" + ATTNDEV_SOURCE_DIR +
                               "/configs/train/in-model-bf16.json' "
                               "--steps 3 --capture 0,2 -j 2 -o '" +
                               out.string() + "'" +
                               (have_corpus ? "" : " --text /usr/share/common-licenses/GPL-3"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* f : {"in_model.csv", "in_model.md", "captures/step_000000/layer_0.safetensors",
                        "captures/step_000002/layer_1.safetensors"})
    CHECK(fs::exists(out / f));
  CHECK_FALSE(fs::exists(out / "captures/step_000001"));
  const auto cap = attndev::io::read_safetensors(out / "captures/step_000002/layer_1.safetensors");
  CHECK(cap.metadata.at("step") == "2");
  CHECK(cap.metadata.at("layer") == "1");
  CHECK(cap.metadata.at("policy") == "kernel-bf16");
  REQUIRE(cap.tensors.size() == 3);
  CHECK(cap.tensors[0].shape == std::vector<std::int64_t>{8, 4, 64, 16});  // (B, H, N, d)
  // Shadow steps {"every": 50} of 3 steps: step 0 only; 2 layers x 5 variants x (all + 4 heads).
  const auto rows = attndev::io::parse_csv(slurp(out / "in_model.csv"));
  CHECK(rows.size() == 1 + 2 * 5 * 5);
  fs::remove_all(scratch());
}

TEST_CASE("a captured layer measured by attndev point --inputs gives its in_model.csv row",
          "[train][cli]") {
  const fs::path out = scratch() / "roundtrip";
  fs::remove_all(out);
  const bool have_corpus = fs::exists("/usr/share/games/fortunes/fortunes");
  // fp32 training under a bf16 driving policy: the captured values are fp32, so point's rounding
  // of them to each variant's input format is part of what must agree.
  fs::create_directories(out);
  const fs::path config = out.parent_path() / "roundtrip.json";
  std::ofstream(config) << R"({"name": "roundtrip", "steps": 2, "batch": 2, "precision": "fp32",
    "attention": {"algorithm": "flash2", "policy": "kernel-bf16", "block_r": 16, "block_c": 16},
    "model": {"d_model": 32, "heads": 2, "layers": 2, "context": 40, "mlp_hidden": 64},
    "shadow": [{"algorithm": "baseline", "policy": "torch-math-bf16"},
               {"algorithm": "flash1", "policy": "working-bf16"},
               {"algorithm": "flash2", "policy": "fp32", "block_r": 64, "block_c": 64}]})";
  Result r =
      run_attndev("train '" + config.string() + "' --capture 0 -j 2 --force -o '" + out.string() +
                  "'" + (have_corpus ? "" : " --text /usr/share/common-licenses/GPL-3"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::map<std::string, std::vector<std::string>> rows;  // "layer|variant" -> row (head all)
  const auto csv = attndev::io::parse_csv(slurp(out / "in_model.csv"));
  REQUIRE(csv.size() > 1);
  REQUIRE(csv[0][3] == "layer");
  REQUIRE(csv[0][12] == "max_abs");
  for (const auto& row : csv)
    if (row.size() == csv[0].size() && row[2] == "0" && row[4] == "all")
      rows[row[3] + "|" + row[5]] = row;
  // The driver and every shadow, both layers.
  const std::vector<std::tuple<std::string, std::string, std::string, int>> variants = {
      {"flash2/kernel-bf16", "flash2", "kernel-bf16", 16},
      {"baseline/torch-math-bf16", "baseline", "torch-math-bf16", 16},
      {"flash1/working-bf16", "flash1", "working-bf16", 16},
      {"flash2/fp32/64x64", "flash2", "fp32", 64}};
  for (int layer : {0, 1}) {
    const fs::path capture =
        out / "captures" / "step_000000" / ("layer_" + std::to_string(layer) + ".safetensors");
    for (const auto& [name, algo, policy, tile] : variants) {
      INFO("layer " << layer << ", " << name);
      const auto& row = rows.at(std::to_string(layer) + "|" + name);
      r = run_attndev("point --inputs '" + capture.string() + "' --algo " + algo + " --policy " +
                      policy + " --br " + std::to_string(tile) + " --bc " + std::to_string(tile) +
                      " --causal --json");
      INFO(r.err);
      REQUIRE(r.code == 0);
      const auto j = nlohmann::json::parse(r.out);
      // Bit for bit: in_model.csv writes the shortest text that reads back to the same double.
      CHECK(j.at("variant").at("max_abs").get<double>() == std::stod(row[12]));
      CHECK(j.at("variant").at("mean_abs").get<double>() == std::stod(row[13]));
      CHECK(j.at("variant").at("rmse").get<double>() == std::stod(row[14]));
      CHECK(j.at("variant").at("count").get<std::int64_t>() == std::stoll(row[11]));
    }
  }
  fs::remove_all(scratch());
}

TEST_CASE("attndev train rejects bad input with exit 2 and writes nothing", "[train][cli]") {
  fs::create_directories(scratch());
  const fs::path bad = scratch() / "bad.json";
  std::ofstream(bad) << R"({"attention": {"algoritm": "flash2"}})";
  const fs::path out = scratch() / "never";
  Result r = run_attndev("train '" + bad.string() + "' -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("attention.algoritm") && Catch::Contains("algorithm"));
  CHECK_FALSE(fs::exists(out));
  std::ofstream(bad) << R"({"attention": {"algorithm": "flash2", "policy": "framework-bf16"}})";
  r = run_attndev("train '" + bad.string() + "' -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("attention.policy") &&
                        Catch::Contains("framework rounding model") && Catch::Contains("shadow"));
  CHECK_FALSE(fs::exists(out));
  r = run_attndev("train '" + kStudy + "' --text /nonexistent.txt -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent.txt"));
  CHECK_FALSE(fs::exists(out));
  r = run_attndev("train '" + kStudy + "' --quick --capture 5,30 -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--capture 30"));
  CHECK_FALSE(fs::exists(out));
  r = run_attndev("train '" + kStudy + "' --quick --corpus fortune -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("fortune") && Catch::Contains("fortunes-min"));
  CHECK_FALSE(fs::exists(out));
  // A text shorter than one training window used to fail after creating the folder, exit 1.
  const fs::path short_text = scratch() / "short.txt";
  std::ofstream(short_text) << "hello world";
  r = run_attndev("train '" + ATTNDEV_SOURCE_DIR + "/configs/train/tiny-flash2.json' --text '" +
                  short_text.string() + "' -o '" + out.string() + "'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("has 11 characters") &&
                        Catch::Contains("needs at least model.context + 2 = 66"));
  CHECK_FALSE(fs::exists(out));
  fs::remove_all(scratch());
}

TEST_CASE("attndev train fails with exit 1 when nothing was trained or the loss diverged",
          "[train][cli]") {
  // lr 10 at fp16 used to exit 0 with a NaN loss and 29 of 30 steps skipped; a loss scale that
  // overflows every step skipped every update and still reported success.
  fs::create_directories(scratch());
  nlohmann::json base =
      nlohmann::json::parse(slurp(ATTNDEV_SOURCE_DIR + "/configs/train/tiny-flash2.json"));
  base["precision"] = "fp16";
  base["attention"]["policy"] = "kernel-fp16";
  base["model"] = {
      {"d_model", 16}, {"heads", 2}, {"layers", 1}, {"context", 16}, {"mlp_hidden", 32}};
  base["snapshot_every"] = 10;
  base["optimizer"]["warmup_steps"] = 0;
  struct Case {
    const char* name;
    int steps;
    double lr, scale;
    const char* fragment;
  };
  for (const Case& c :
       {Case{"diverged", 30, 10.0, 65536.0, "non-finite since step 1"},
        Case{"all-skipped", 4, 3e-3, 1e30, "every one of the 4 steps was skipped"}}) {
    INFO(c.name);
    nlohmann::json cfg = base;
    cfg["name"] = c.name;
    cfg["steps"] = c.steps;
    cfg["optimizer"]["lr"] = c.lr;
    cfg["loss_scale"] = {{"init", c.scale}};
    const fs::path file = scratch() / (std::string(c.name) + ".json");
    std::ofstream(file) << cfg.dump();
    const fs::path out = scratch() / c.name;
    fs::remove_all(out);
    const Result r = run_attndev("train '" + file.string() + "' -j 1 -o '" + out.string() + "'");
    INFO(r.out + r.err);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("run " + std::string(c.name)) &&
                          Catch::Contains(c.fragment) && Catch::Contains("lower optimizer.lr"));
    // The files stay as the diagnosis, and run.json says the run failed.
    const nlohmann::json run = nlohmann::json::parse(slurp(out / "run.json"));
    CHECK_THAT(run["status"].get<std::string>(), Catch::StartsWith("failed: "));
    CHECK(fs::exists(out / "loss.csv"));
  }
}
