// `attndev plot` end to end on a real run folder: a sweep over seq_len and block_c with three
// trials, the pivot's numbers checked against the rows of results.jsonl (recomputed here from
// the file, not from the pivot code), the tables written into the results folder. Drawing the
// figure (Python, matplotlib from PyPI) is test/plot/draw_test.sh, which can SKIP (exit 77) when
// PyPI cannot be reached; Catch2 v2 has no SKIP.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.hpp"

namespace plot_test {

namespace fs = std::filesystem;
using attndev::test::Result;
using attndev::test::run_cli;
using attndev::test::work_dir;
using attndev::test::write_config;

const char* const kSweep = R"json({
  "name": "plot-sweep",
  "axes": {"seq_len": [32, 64, 128], "head_dim": 16, "block_r": 16, "block_c": [8, 16],
           "distribution": "normal(0,1)"},
  "trials": 3,
  "variants": [
    {"name": "baseline-bf16", "algorithm": "baseline", "policy": "torch-math-bf16"},
    {"name": "flash2-bf16", "algorithm": "flash2", "policy": "kernel-bf16",
     "ratio_to": "baseline-bf16"}
  ]
})json";

struct Stats {
  double mean = 0, min = 0, max = 0;
  std::size_t n = 0;
};

// (block_c, seq_len) -> ratio_max_abs statistics of flash2's rows, from the JSONL itself.
std::map<std::pair<int, int>, Stats> expected_cells(const fs::path& jsonl) {
  std::map<std::pair<int, int>, std::vector<double>> values;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row.value("record", std::string()) != "row") continue;
    if (row["variant"].get<std::string>() != std::string("flash2-bf16")) continue;
    values[{row["block_c"].get<int>(), row["seq_len"].get<int>()}].push_back(
        row["ratio_max_abs"].get<double>());
  }
  std::map<std::pair<int, int>, Stats> cells;
  for (const auto& [key, v] : values) {
    Stats s;
    s.n = v.size();
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    for (double x : v) s.mean += x / static_cast<double>(v.size());
    cells[key] = s;
  }
  return cells;
}

std::vector<std::string> split_csv_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  return out;
}

}  // namespace plot_test

TEST_CASE("plot: a sweep's pivot matches its rows and its tables land in the results folder",
          "[cli][plot]") {
  using namespace plot_test;
  const fs::path cfg = write_config("plot_sweep", kSweep);
  const fs::path dir = work_dir() / "plot_run";
  const Result run = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
  INFO(run.err);
  REQUIRE(run.code == 0);

  // The tables alone first: no Python involved.
  const Result tables = run_cli({"plot", dir.string(), "--metric", "ratio_max_abs", "--x",
                                 "seq_len", "--series", "block_c", "--no-draw"});
  INFO(tables.err);
  REQUIRE(tables.code == 0);
  const fs::path stem = dir / "plot-ratio_max_abs-by-seq_len-block_c";
  REQUIRE(fs::exists(fs::path(stem).concat(".csv")));
  REQUIRE(fs::exists(fs::path(stem).concat(".md")));
  CHECK_FALSE(fs::exists(fs::path(stem).concat(".png")));
  CHECK(tables.out.find("| seq_len | block_c = 8 | block_c = 16 |") != std::string::npos);

  const auto expected = expected_cells(dir / "results.jsonl");
  REQUIRE(expected.size() == 6);
  std::ifstream csv(fs::path(stem).concat(".csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(split_csv_line(line) == std::vector<std::string>{"block_c", "seq_len", "mean", "min", "max",
                                                         "std", "n", "ci_low", "ci_high",
                                                         "ci_method", "non_finite"});
  std::size_t seen = 0;
  std::vector<std::pair<int, int>> order;
  while (std::getline(csv, line)) {
    const auto f = split_csv_line(line);
    REQUIRE(f.size() >= 10);  // split_csv_line drops the empty last field (non_finite)
    const std::pair<int, int> key{std::stoi(f[0]), std::stoi(f[1])};
    order.push_back(key);
    REQUIRE(expected.count(key) == 1);
    const Stats& e = expected.at(key);
    INFO("block_c " << key.first << " seq_len " << key.second);
    CHECK(std::stoul(f[6]) == 3);
    CHECK(e.n == 3);
    CHECK(std::stod(f[2]) == Approx(e.mean).epsilon(1e-14));
    CHECK(std::stod(f[3]) == e.min);  // shortest round-trip text: exact
    CHECK(std::stod(f[4]) == e.max);
    CHECK(std::stod(f[5]) >= 0);
    CHECK(e.min < e.max);  // three seeds: the trials do spread, so the bars mean something
    CHECK(f[9] == "t");    // three trials: Student's t interval around the mean
    CHECK(std::stod(f[7]) < std::stod(f[2]));
    CHECK(std::stod(f[8]) > std::stod(f[2]));
    ++seen;
  }
  CHECK(seen == 6);
  // Series in plan order, x by value.
  CHECK(order == std::vector<std::pair<int, int>>{
                     {8, 32}, {8, 64}, {8, 128}, {16, 32}, {16, 64}, {16, 128}});

  // Averaging over block_c (not on the figure) is refused, and nothing new is written.
  const Result mixed = run_cli({"plot", dir.string(), "--metric", "rmse", "--x", "seq_len", "-o",
                                (dir / "mixed.svg").string(), "--no-draw"});
  CHECK(mixed.code == 2);
  CHECK(mixed.err.find("block_c takes more than one value") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "mixed.csv"));
}

namespace plot_test {

// A scripts folder whose "plotting environment" is /bin/sh and whose draw_pivot.py is a shell
// script writing FIGURE to its -o path: attndev's handling of the figure file, without Python.
fs::path fake_scripts() {
  const fs::path dir = work_dir() / "fake_scripts";
  fs::create_directories(dir);
  attndev::test::write_text(dir / "plot-venv.sh", "echo /bin/sh\n");
  attndev::test::write_text(dir / "draw_pivot.py",
                            "while [ $# -gt 1 ]; do shift; done\nprintf FIGURE > \"$1\"\n");
  return dir;
}

fs::path small_run(const std::string& name, const std::string& variants) {
  const fs::path cfg = write_config(name, R"({"name": ")" + name +
                                              R"(", "axes": {"seq_len": [16, 32], "head_dim": 8,
                                              "block_c": 8}, "variants": )" +
                                              variants + "}");
  const fs::path dir = work_dir() / name;
  const Result run = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
  INFO(run.err);
  REQUIRE(run.code == 0);
  return dir;
}

const char* const kTwo = R"([{"name": "b", "algorithm": "baseline", "policy": "torch-math-bf16"},
  {"name": "f", "algorithm": "flash2", "policy": "kernel-bf16", "ratio_to": "b"}])";

}  // namespace plot_test

TEST_CASE("plot replaces a link planted at the figure's path, never writing through it",
          "[cli][plot]") {
  using namespace plot_test;
  const fs::path dir = small_run("plot_link", kTwo);
  const fs::path victim = work_dir() / "victim.txt";
  attndev::test::write_text(victim, "precious\n");
  const fs::path figure = dir / "fig.png";
  fs::create_symlink(victim, figure);
  const Result r =
      run_cli({"plot", dir.string(), "--metric", "rmse", "--x", "seq_len", "-o", figure.string()},
              {"ATTNDEV_SCRIPTS_DIR=" + fake_scripts().string()});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(attndev::test::slurp(victim) == "precious\n");
  CHECK_FALSE(fs::is_symlink(figure));
  CHECK(attndev::test::slurp(figure) == "FIGURE");
  // No temporary file is left beside the figure.
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("plot -o may not name a file the run owns", "[cli][plot]") {
  using namespace plot_test;
  const fs::path dir = small_run("plot_owned", kTwo);
  const std::string csv_before = attndev::test::slurp(dir / "results.csv");
  const std::string md_before = attndev::test::slurp(dir / "summary.md");
  for (const char* name : {"results.png", "summary.svg", "attribution.pdf"}) {
    const Result r = run_cli({"plot", dir.string(), "--metric", "rmse", "--x", "seq_len", "-o",
                              (dir / name).string(), "--no-draw"});
    INFO(name << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("belongs to the run"));
  }
  CHECK(attndev::test::slurp(dir / "results.csv") == csv_before);
  CHECK(attndev::test::slurp(dir / "summary.md") == md_before);
  // Another name in the same folder is fine.
  const Result ok = run_cli({"plot", dir.string(), "--metric", "rmse", "--x", "seq_len", "-o",
                             (dir / "figure.png").string(), "--no-draw"});
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK(fs::exists(dir / "figure.csv"));
}

TEST_CASE("plot names an inf ratio instead of dropping the variant", "[cli][plot]") {
  using namespace plot_test;
  // The fp64 baseline is the golden itself (max_abs exactly 0), so flash2's fp64 ratio is inf.
  const fs::path dir =
      small_run("plot_inf", R"([{"name": "b64", "algorithm": "baseline", "policy": "fp64"},
      {"name": "f64", "algorithm": "flash2", "policy": "fp64", "ratio_to": "b64"},
      {"name": "b", "algorithm": "baseline", "policy": "torch-math-bf16"},
      {"name": "f", "algorithm": "flash2", "policy": "kernel-bf16", "ratio_to": "b"}])");
  const Result r =
      run_cli({"plot", dir.string(), "--metric", "ratio_max_abs", "--x", "seq_len", "--no-draw"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("| seq_len | variant = f64 | variant = f |"));
  CHECK_THAT(r.out, Catch::Contains("| 16 | inf (1 trial) |"));
  CHECK_THAT(r.out, Catch::Contains("2 non-finite"));
  // With no finite ratio at all, the error counts the infinite ones instead of calling them
  // "without a value" (b64's rows, which have no ratio_to, are the ones without).
  const fs::path only =
      small_run("plot_only_inf", R"([{"name": "b64", "algorithm": "baseline", "policy": "fp64"},
      {"name": "f64", "algorithm": "flash2", "policy": "fp64", "ratio_to": "b64"}])");
  const Result none =
      run_cli({"plot", only.string(), "--metric", "ratio_max_abs", "--x", "seq_len", "--no-draw"});
  INFO(none.err);
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("2 with a non-finite value"));
}
