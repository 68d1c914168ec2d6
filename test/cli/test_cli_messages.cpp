// Small mistakes a user makes, through the attndev binary: each ends in exit 2 (or a warning)
// with a message that says what is wrong and how to fix it, and names only flags that exist
// (issue "Reliability", item 9).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "spawn.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using namespace attndev::test;

namespace {

// A one-point flash2 config named `name` in <file>.json, `extra` spliced in before "variants".
fs::path write_small_config(const std::string& file, const std::string& name,
                            const std::string& extra = "") {
  return write_config(file, R"({"name": ")" + name +
                                R"(", "axes": {"seq_len": [32], "head_dim": 16},)" + extra +
                                R"( "variants": [{"algorithm": "flash2", "policy": "fp32"}]})");
}

}  // namespace

TEST_CASE("a shard count of 0 (--shard 1/0) says so", "[cli][messages]") {
  const fs::path cfg = write_small_config("shard", "shard");
  for (const char* command : {"run", "plan"}) {
    const Result r = run_cli({command, cfg.string(), "--shard", "1/0"});
    INFO(command << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--shard 1/0: the shard count is 0; it must be at least 1"));
    CHECK_THAT(r.err, !Catch::Contains("0..?"));  // the message said "not in 0..?"
  }
}

TEST_CASE("a config name run cannot create as a folder is refused by validate", "[cli][messages]") {
  const fs::path cfg = write_small_config("long_name", std::string(300, 'n'));
  const Result v = run_cli({"validate", cfg.string()});
  INFO(v.out + v.err);
  CHECK(v.code == 2);
  CHECK_THAT(v.err, Catch::Contains("300 characters; at most 128"));
  const Result r = run_cli({"run", cfg.string(), "-o", (work_dir() / "long_name").string()});
  CHECK(r.code == 2);
  CHECK_FALSE(fs::exists(work_dir() / "long_name"));
}

TEST_CASE("trials whose seeds would wrap past 2^64 - 1 are refused", "[cli][messages]") {
  const fs::path cfg = write_small_config(
      "wrap", "wrap", R"( "trials": {"count": 2, "seed": 18446744073709551615},)");
  const Result v = run_cli({"validate", cfg.string()});
  INFO(v.err);
  CHECK(v.code == 2);
  CHECK_THAT(v.err, Catch::Contains("trials.seed") && Catch::Contains("runs past 2^64 - 1"));
}

TEST_CASE("merge and report on a broken manifest name the command that starts over",
          "[cli][messages]") {
  const fs::path cfg = write_small_config("manifest", "manifest");
  const fs::path dir = work_dir() / "manifest_out";
  const Result first = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
  INFO(first.err);
  REQUIRE(first.code == 0);
  write_text(dir / "run.json", "{\"not\": \"a manifest\"}\n");
  for (const char* command : {"merge", "report"}) {
    const Result r = run_cli({command, dir.string()});
    INFO(command << ": " << r.out << r.err);
    CHECK(r.code == 2);
    // merge and report have no --force: the hint names `attndev run ... --force`.
    CHECK_THAT(r.err, Catch::Contains("attndev run CONFIG -o " + dir.string() + " --force"));
    CHECK_THAT(r.err, !Catch::Contains("rerun with --force"));
  }
}

TEST_CASE("wdist warns when a pair of tensors differs in shape", "[cli][messages][wdist]") {
  const std::string data = ATTNDEV_SOURCE_DIR + "/test/data/wdist/";
  const Result r = run_cli({"wdist", data + "unequal_a.npy", data + "unequal_b.npy"});
  INFO(r.out + r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("warning:") && Catch::Contains("[150] in A and [97] in B") &&
                        Catch::Contains("value distributions only"));
  const Result same = run_cli({"wdist", data + "equal_a.npy", data + "equal_b.npy"});
  CHECK(same.code == 0);
  CHECK_THAT(same.err, !Catch::Contains("warning:"));
}
