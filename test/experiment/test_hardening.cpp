// The hardening guarantees of an output folder and of external commands (docs/results.md,
// "Guarantees"), each replayed from the audit that found it broken: no value becomes shell
// syntax, no file is written through a planted link or blocked on by a FIFO, no rows of another
// config or of other inputs contents are mixed in, no external process outlives its call, no
// output of a command fills the disk or drives the terminal, and failed points are retried.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "experiment/external_helpers.hpp"
#include "files.hpp"
#include "experiment/results/merge.hpp"
#include "experiment/results/result_row.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/run/external.hpp"
#include "experiment/run/external_worker.hpp"
#include "experiment/run/tensor_io.hpp"
#include "experiment/runner.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "inputs/random_inputs.hpp"
#include "io/atomic_file.hpp"
#include "io/safe_open.hpp"

namespace fs = std::filesystem;
using namespace attndev;
using namespace attndev::experiment;
using attndev::io::Json;
using attndev::test::file_rows;
using attndev::test::options_for;
using attndev::test::slurp;
using attndev::test::temp_dir;
using attndev::test::write_text;

namespace {

// A folder whose name holds every kind of shell syntax a careless or hostile name can.
fs::path hostile_dir(const std::string& name, const fs::path& marker) {
  return temp_dir(name) / ("x'y\"z $(touch " + marker.string() + ") `touch " + marker.string() +
                           "` ;touch " + marker.string());
}

ExternalContext hardening_context(const fs::path& work_dir) {
  ExternalContext c;
  fs::create_directories(work_dir);
  c.work_dir = work_dir;
  c.inputs_file = work_dir / "inputs.safetensors";
  write_text(c.inputs_file, "not read by these commands");
  c.axes = Json{{"seq_len", 8}, {"distribution", "normal(0,1)"}};
  return c;
}

ExternalResult run_hardened(const std::string& command, const ExternalContext& context,
                            double timeout_s = 30) {
  Variant::External e;
  e.command = command;
  e.timeout_s = timeout_s;
  return run_external(e, numerics::Format::fp32, context, attention::Shape{1, 1, 8, 8, 8});
}

bool process_alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  // A zombie has ended: only its entry waits for a parent.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t close = text.rfind(')');
  return close == std::string::npos || text.substr(close + 2, 1) != "Z";
}

pid_t read_pid(const fs::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

const char* kHardeningConfig = R"({
  "name": "hardening",
  "axes": {"seq_len": [24, 40], "head_dim": 8, "block_c": 8},
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"}
  ]
})";

}  // namespace

TEST_CASE("external: no folder name or axis value becomes shell syntax", "[hardening][external]") {
  const fs::path marker = temp_dir("inj_marker") / "executed";
  fs::create_directories(marker.parent_path());
  const ExternalContext context = hardening_context(hostile_dir("inj", marker) / "work");
  const fs::path seen = marker.parent_path() / "seen";

  SECTION("unquoted placeholders arrive as one word each, unparsed") {
    const ExternalResult r = run_hardened(
        "printf '%s\\n' {output} {distribution} > " + seen.string() + "; exit 3", context);
    CHECK_THAT(r.status.text(), Catch::StartsWith("failed: external command exited with status 3"));
    CHECK(slurp(seen) == (context.work_dir / "output.safetensors").string() + "\nnormal(0,1)\n");
  }
  SECTION("nested shell code reads the values from the environment") {
    const ExternalResult r =
        run_hardened("sh -c 'printf \"%s\" \"$ATTNDEV_OUTPUT\" > \"$0\"; exit 3' " + seen.string() +
                         " {inputs} {output}",
                     context);
    CHECK_THAT(r.status.text(), Catch::StartsWith("failed: external command exited with status 3"));
    CHECK(slurp(seen) == (context.work_dir / "output.safetensors").string());
  }
  SECTION("a placeholder inside quotes is refused, with the reason and the fix") {
    for (const std::string command :
         {"cat \"{output}\" {inputs}", "sh -c 'cat {inputs} > {output}'"}) {
      CAPTURE(command);
      CHECK(external_template_problem(command).has_value());
      const ExternalResult r = run_hardened(command, context);
      CHECK_THAT(r.status.text(), Catch::Contains("quotes"));
      CHECK_THAT(r.status.text(), Catch::Contains("$ATTNDEV_"));
    }
  }
  CHECK_FALSE(fs::exists(marker));
  fs::remove_all(marker.parent_path());
  fs::remove_all(context.work_dir.parent_path().parent_path());
}

TEST_CASE("a quoted placeholder is refused when the config is read, and by run",
          "[hardening][external]") {
  const std::string text = R"({"name": "q", "axes": {"seq_len": 16, "head_dim": 8},
    "variants": [{"name": "ext", "external": "sh -c 'cp {inputs} {output}'"}]})";
  // validate, plan and run all read the config through parse_config: each refuses it, with the
  // variant's path and the reason.
  try {
    (void)parse_config(text);
    FAIL("parse_config accepted a quoted placeholder");
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("variants[0].external"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("quotes"));
  }
  // A config built in code skips the parser; run_experiment checks again before writing.
  Config config = parse_config(R"({"name": "q", "axes": {"seq_len": 16, "head_dim": 8},
    "variants": [{"name": "ext", "external": "cp {inputs} {output}"}]})");
  config.variants[0].external->command = "sh -c 'cp {inputs} {output}'";
  const fs::path dir = temp_dir("quoted");
  CHECK_THROWS_AS(run_experiment(config, make_plan(config), options_for(dir)), ConfigError);
  CHECK_FALSE(fs::exists(dir / "results.jsonl"));
}

TEST_CASE("external: a stale output of an earlier call is never read", "[hardening][external]") {
  const ExternalContext context = hardening_context(temp_dir("stale") / "work");
  // np.save's name for {output}: accepted as output, so it must go before every call.
  write_text(context.work_dir / "output.safetensors.npy", "left by the previous point");
  const ExternalResult r = run_hardened("true {inputs} {output}", context);
  CHECK_THAT(r.status.text(),
             Catch::StartsWith("failed: external command exited 0 but wrote no {output} file"));
  fs::remove_all(context.work_dir.parent_path());
}

TEST_CASE("external: stdout and stderr are kept as a bounded, escaped tail",
          "[hardening][external]") {
  const ExternalContext context = hardening_context(temp_dir("tail") / "work");
  SECTION("50 MB of output leave no file larger than the tail") {
    const ExternalResult r = run_hardened(
        "head -c 50000000 /dev/zero; head -c 20000000 /dev/zero | tr '\\0' e >&2; "
        "echo last words >&2; exit 3 {inputs} {output}",
        context);
    CHECK_THAT(r.status.text(), Catch::EndsWith("last words"));
    for (const auto& entry : fs::recursive_directory_iterator(context.work_dir.parent_path()))
      if (entry.is_regular_file()) CHECK(entry.file_size() <= kExternalTailBytes);
  }
  SECTION("control characters and NUL bytes are escaped in the status") {
    const ExternalResult r = run_hardened(
        "printf 'a\\033]0;retitled\\007\\033[2J\\000b\\302\\233c\\n' >&2; exit 3 {inputs} {output}",
        context);
    const std::string status = r.status.text();
    CAPTURE(status);
    CHECK(std::none_of(status.begin(), status.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }));
    CHECK_THAT(status, Catch::EndsWith("a\\x1b]0;retitled\\x07\\x1b[2J\\x00b\\xc2\\x9bc"));
  }
  SECTION("BoundedTail keeps the last bytes") {
    BoundedTail tail(8);
    for (int i = 0; i < 100; ++i) tail.append("0123456789");
    CHECK(tail.text() == "23456789");
  }
  fs::remove_all(context.work_dir.parent_path());
}

TEST_CASE("external: no process of a command outlives its call", "[hardening][external]") {
  const ExternalContext context = hardening_context(temp_dir("tree") / "work");
  const fs::path pid_file = context.work_dir.parent_path() / "child.pid";
  SECTION("a background child of a command that exits") {
    run_hardened("sleep 60 & echo $! > " + pid_file.string() + "; exit 3 {inputs} {output}",
                 context);
  }
  SECTION("a setsid child of a command that exits") {
    run_hardened("setsid sleep 60 & echo $! > " + pid_file.string() + "; exit 3 {inputs} {output}",
                 context);
  }
  SECTION("a setsid child of a command that times out") {
    const ExternalResult r = run_hardened(
        "setsid sleep 60 & echo $! > " + pid_file.string() + "; sleep 60; true {inputs} {output}",
        context, 0.5);
    CHECK_THAT(r.status.text(), Catch::StartsWith("failed: external command timed out"));
  }
  const pid_t pid = read_pid(pid_file);
  REQUIRE(pid > 0);
  CHECK_FALSE(process_alive(pid));
  fs::remove_all(context.work_dir.parent_path());
}

TEST_CASE("output folder: planted links and FIFOs are refused, never followed or blocked on",
          "[hardening][folder]") {
  const Config config = parse_config(kHardeningConfig);
  const Plan plan = make_plan(config);
  const fs::path dir = temp_dir("links");
  const fs::path victim = temp_dir("victim");
  fs::create_directories(dir);
  fs::create_directories(victim);
  write_text(victim / "precious", "keep me");

  SECTION("a lock file linked to a file elsewhere") {
    fs::create_symlink(victim / "precious", dir / ".results.jsonl.lock");
    CHECK_THROWS_WITH(run_experiment(config, plan, options_for(dir)),
                      Catch::Contains("symbolic link"));
  }
  SECTION("the folder lock linked to a file elsewhere") {
    fs::create_symlink(victim / "precious", dir / ".attndev.lock");
    CHECK_THROWS_WITH(run_experiment(config, plan, options_for(dir)),
                      Catch::Contains("symbolic link"));
  }
  SECTION("a dangling results.jsonl link") {
    fs::create_symlink(victim / "rows.jsonl", dir / "results.jsonl");
    CHECK_THROWS_WITH(run_experiment(config, plan, options_for(dir)),
                      Catch::Contains("symbolic link"));
    CHECK_FALSE(fs::exists(victim / "rows.jsonl"));
  }
  SECTION("a FIFO named results.jsonl or run.json") {
    for (const char* name : {"results.jsonl", "run.json"}) {
      fs::remove_all(dir);
      fs::create_directories(dir);
      REQUIRE(::mkfifo((dir / name).c_str(), 0644) == 0);
      CHECK_THROWS_WITH(run_experiment(config, plan, options_for(dir)), Catch::Contains("FIFO"));
    }
  }
  CHECK(slurp(victim / "precious") == "keep me");
  fs::remove_all(dir);
  fs::remove_all(victim);
}

TEST_CASE("output folder: a FIFO shard file is refused by merge", "[hardening][folder]") {
  const Config config = parse_config(kHardeningConfig);
  const fs::path dir = temp_dir("fifo_merge");
  RunOptions o = options_for(dir);
  o.shard_count = 2;
  run_experiment(config, make_plan(config), o);
  fs::remove(dir / "results.shard-1-of-2.jsonl");
  REQUIRE(::mkfifo((dir / "results.shard-1-of-2.jsonl").c_str(), 0644) == 0);
  CHECK_THROWS_WITH(merge_results(dir, o.provenance), Catch::Contains("FIFO"));
  fs::remove_all(dir);
}

TEST_CASE("output folder: deleted mid-run is an error, never a clean exit", "[hardening][folder]") {
  const Config config = parse_config(kHardeningConfig);
  const fs::path dir = temp_dir("vanish");
  RunOptions o = options_for(dir);
  o.on_progress = [&](std::size_t done, std::size_t) {
    if (done == 1) fs::remove_all(dir);
  };
  CHECK_THROWS_WITH(run_experiment(config, make_plan(config), o),
                    Catch::Contains("deleted or replaced"));
  fs::remove_all(dir);
}

TEST_CASE("leftover temporary files of killed writers are removed", "[hardening][folder]") {
  const Config config = parse_config(kHardeningConfig);
  const fs::path dir = temp_dir("tmp_left");
  fs::create_directories(dir);
  write_text(dir / "results.json.tmp.999999999", std::string(1000, 'x'));
  write_text(dir / "results.jsonl.tmp.999999998", "torn");
  run_experiment(config, make_plan(config), options_for(dir));
  CHECK_FALSE(fs::exists(dir / "results.json.tmp.999999999"));
  CHECK_FALSE(fs::exists(dir / "results.jsonl.tmp.999999998"));
  write_text(dir / "summary.md.tmp.999999997", "half");
  { const OutputLock lock = lock_folder(dir, "test"); }
  CHECK_FALSE(fs::exists(dir / "summary.md.tmp.999999997"));
  fs::remove_all(dir);
}

TEST_CASE("config hash: presentation keys are out, everything else is in", "[hardening][hash]") {
  const Config base = parse_config(kHardeningConfig);
  std::string text = kHardeningConfig;
  text.insert(
      text.find("\"axes\""),
      R"("description": "words", "metrics": ["rmse"], "dump": true, "_note": "x", "backend": "cuda", )");
  const Config presented = parse_config(text);
  CHECK(presented.hash == base.hash);
  std::string other = kHardeningConfig;
  other.replace(other.find("kernel-bf16"), 11, "kernel-fp16");
  CHECK(parse_config(other).hash != base.hash);
}

TEST_CASE("config hash: a folder of the old hash is refused with what to do", "[hardening][hash]") {
  std::string text = kHardeningConfig;
  text.insert(text.find("\"axes\""), R"("description": "changes only the old hash", )");
  const Config config = parse_config(text);
  const fs::path dir = temp_dir("legacy");
  run_experiment(config, make_plan(config), options_for(dir));
  Json manifest = Json::parse(slurp(dir / "run.json"));
  manifest["config_hash"] = legacy_config_hash(manifest["config"]);
  REQUIRE(manifest["config_hash"].get<std::string>() != config.hash);
  write_text(dir / "run.json", manifest.dump(2));
  CHECK_THROWS_WITH(read_manifest_config(dir),
                    Catch::Contains("older attndev") && Catch::Contains("--force"));
  CHECK_THROWS_WITH(run_experiment(config, make_plan(config), options_for(dir)),
                    Catch::Contains("older attndev"));
  fs::remove_all(dir);
}

TEST_CASE("rows of another config are never mixed in", "[hardening][hash]") {
  // a and b differ in one variant's policy: the same points, so b's rows of the unchanged
  // variant ("base", same key) are a's rows too, and its rows of "flash" are not.
  const Config a = parse_config(kHardeningConfig);
  std::string text = kHardeningConfig;
  text.replace(text.find("kernel-bf16"), 11, "kernel-fp16");
  const Config b = parse_config(text);
  REQUIRE(a.points_hash == b.points_hash);
  REQUIRE(a.variant_keys[0] == b.variant_keys[0]);
  REQUIRE(a.variant_keys[1] != b.variant_keys[1]);
  const fs::path dir_a = temp_dir("mix_a"), dir_b = temp_dir("mix_b");
  RunOptions oa = options_for(dir_a), ob = options_for(dir_b);
  oa.shard_count = ob.shard_count = 2;
  ob.shard_index = 1;
  run_experiment(a, make_plan(a), oa);
  run_experiment(b, make_plan(b), ob);
  const auto flash_keys = [](const std::vector<Json>& rows) {
    std::set<std::string> keys;
    for (const Json& r : rows)
      if (r["variant"] == "flash") keys.insert(r["variant_key"].get<std::string>());
    return keys;
  };

  SECTION("merge keeps b's rows of the unchanged variant and drops its rows of the edited one") {
    fs::copy_file(dir_b / "results.shard-1-of-2.jsonl", dir_a / "results.shard-1-of-2.jsonl");
    const MergeReport merged = merge_results(dir_a, oa.provenance);
    CHECK(flash_keys(file_rows(dir_a / "results.jsonl")) ==
          std::set<std::string>{a.variant_keys[1]});
    CHECK(merged.missing_ids.size() == merged.points_total - merged.points_present);
  }
  SECTION("a run after run.json was deleted recomputes the edited variant's rows") {
    fs::remove(dir_b / "run.json");
    RunOptions o = options_for(dir_b);
    o.shard_count = 2;
    o.shard_index = 1;
    const RunReport r = run_experiment(a, make_plan(a), o);
    const StoredResults stored = load_results(dir_b, a, make_plan(a));
    CHECK(flash_keys(stored.rows) == std::set<std::string>{a.variant_keys[1]});
    CHECK(r.ran >= 1);  // the points of the shard, for "flash" alone
  }
  fs::remove_all(dir_a);
  fs::remove_all(dir_b);
}

TEST_CASE("issue 38 item 3: an edited variant recomputes its rows alone", "[hardening][hash]") {
  const Config a = parse_config(kHardeningConfig);
  const fs::path dir = temp_dir("edit_variant");
  run_experiment(a, make_plan(a), options_for(dir));
  const std::vector<Json> before = file_rows(dir / "results.jsonl");
  REQUIRE(before.size() == 4);
  std::string text = kHardeningConfig;
  text.replace(text.find("kernel-bf16"), 11, "kernel-fp16");
  const Config b = parse_config(text);
  // Accepted without --force: only a variant changed.
  const RunReport r = run_experiment(b, make_plan(b), options_for(dir));
  CHECK(r.ran == 2);
  const std::vector<Json> after = file_rows(dir / "results.jsonl");
  // The baseline's two rows kept as they were (same bytes), two new rows for "flash".
  std::size_t kept = 0, flash_new = 0;
  for (const Json& row : after) {
    if (row["variant"] == "base") kept += std::count(before.begin(), before.end(), row) == 1;
    if (row["variant"] == "flash" && row["variant_key"] == b.variant_keys[1]) ++flash_new;
  }
  CHECK(kept == 2);
  CHECK(flash_new == 2);
  const StoredResults stored = load_results(dir, b, make_plan(b));
  CHECK(stored.rows.size() == 4);
  for (const Json& row : stored.rows)
    if (row["variant"] == "flash") CHECK(row["policy"] == "kernel-fp16");
  // Its ratios are taken against the kept baseline rows.
  for (const Json& row : stored.rows)
    if (row["variant"] == "flash") CHECK(row.contains("ratio_rmse"));
  // A change of the points is still another experiment.
  const std::vector<std::string> other_points = {"seq_len=[56]"};
  const Config c = parse_config(text, other_points);
  CHECK_THROWS_WITH(run_experiment(c, make_plan(c), options_for(dir)),
                    Catch::Contains("holds results of another config"));
  fs::remove_all(dir);
}

TEST_CASE("rows measured on other contents of an inputs file are never mixed in",
          "[hardening][hash]") {
  const fs::path dir = temp_dir("inputs_changed");
  const fs::path file = temp_dir("inputs_file") / "qkv.safetensors";
  fs::create_directories(file.parent_path());
  auto write_inputs = [&](std::uint64_t seed) {
    const attention::Inputs in = inputs::make_inputs(
        attention::Shape{1, 1, 16, 16, 8}, inputs::Distribution{}, seed, numerics::Format::fp32);
    write_inputs_file(file, in, numerics::Format::fp32, {});
  };
  write_inputs(1);
  const Config config = parse_config(R"({"name": "files", "axes": {"inputs": ")" + file.string() +
                                     R"(", "block_c": [8, 16]},
    "variants": [{"name": "flash", "algorithm": "flash2", "policy": "fp32"}]})");
  RunOptions o = options_for(dir);
  o.shard_count = 2;
  run_experiment(config, make_plan(config), o);
  write_inputs(2);
  o.shard_index = 1;
  CHECK_THROWS_WITH(run_experiment(config, make_plan(config), o),
                    Catch::Contains(file.string()) && Catch::Contains("content hash"));
  fs::remove_all(dir);
  fs::remove_all(file.parent_path());
}

TEST_CASE("inputs that overflow the input format are not a clean ok", "[hardening][inputs]") {
  for (const char* dist : {"outlier(1e6,1)", "normal(0,1e5)"}) {
    CAPTURE(dist);
    const Config config = parse_config(
        std::string(R"({"name": "ovf", "axes": {"seq_len": 16, "head_dim": 8, "distribution": ")") +
        dist +
        R"("}, "variants": [{"name": "f", "algorithm": "flash2", "policy": "kernel-fp16"}]})");
    const fs::path dir = temp_dir("overflow");
    const RunReport report = run_experiment(config, make_plan(config), options_for(dir));
    CHECK(report.rows_ok == 0);
    const std::vector<Json> rows = file_rows(dir / "results.jsonl");
    REQUIRE(rows.size() == 1);
    CHECK_THAT(rows[0]["status"].get<std::string>(),
               Catch::StartsWith("skipped: inputs overflow fp16"));
    fs::remove_all(dir);
  }
}

TEST_CASE("failed points are retried by the next run unless --no-retry", "[hardening][retry]") {
  const fs::path flag = temp_dir("retry_flag") / "fixed";
  fs::create_directories(flag.parent_path());
  // Fails until `flag` exists, then says "cannot run here": a row that changes on a retry
  // without needing a kernel.
  const Config config = parse_config(
      R"({"name": "retry", "axes": {"seq_len": [16, 24], "head_dim": 8},
      "variants": [{"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
                   {"name": "ext", "external": "test -e )" +
      flag.string() + R"( || exit 3; exit 77 {inputs} {output}"}]})");
  const Plan plan = make_plan(config);
  const fs::path dir = temp_dir("retry");
  RunReport r = run_experiment(config, plan, options_for(dir));
  CHECK(r.rows_failed == 2);
  const std::string flash_rows = [&] {
    std::string out;
    for (const Json& row : file_rows(dir / "results.jsonl"))
      if (row["variant"] == "flash") out += row["max_abs"].dump() + ";";
    return out;
  }();
  write_text(flag, "");

  RunOptions keep = options_for(dir);
  keep.retry_failed = false;
  r = run_experiment(config, plan, keep);
  CHECK(r.ran == 0);
  CHECK(r.rows_failed == 2);

  r = run_experiment(config, plan, options_for(dir));
  CHECK(r.retried == 2);
  CHECK(r.ran == 2);
  CHECK(r.rows_failed == 0);
  CHECK(r.rows_skipped == 2);
  CHECK(r.rows_ok == 2);
  const StoredResults stored = load_results(dir, config, plan);
  REQUIRE(stored.rows.size() == 4);
  std::string flash_after;
  for (const Json& row : stored.rows)
    if (row["variant"] == "flash") flash_after += row["max_abs"].dump() + ";";
  CHECK(flash_after == flash_rows);
  r = run_experiment(config, plan, options_for(dir));
  CHECK(r.ran == 0);
  fs::remove_all(dir);
  fs::remove_all(flag.parent_path());
}

namespace {

// Processes whose command line is exactly `argv` (NUL-separated in /proc/<pid>/cmdline).
int processes_with_cmdline(const std::string& argv) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    n += slurp(entry.path() / "cmdline") == argv;
  }
  return n;
}

}  // namespace

TEST_CASE("issue 39 row 16: a worker that never says ready is started once per run",
          "[experiment][worker]") {
  const Config config = parse_config(R"({"name": "never", "axes": {"seq_len": [16, 24, 33],
      "head_dim": 8}, "variants": [{"name": "never-ready", "external": {"worker": "sleep 60",
      "start_timeout": 0.5}}]})");
  const Plan plan = make_plan(config);
  const fs::path dir = temp_dir("never_ready");
  const int before = workers_started();
  run_experiment(config, plan, options_for(dir));
  // Not three starts of 0.5 s each (60 s each with the default start timeout).
  CHECK(workers_started() - before == 1);
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 3);
  int remembered = 0;
  for (const Json& r : rows) {
    CHECK_THAT(r["status"].get<std::string>(),
               Catch::StartsWith("failed: external worker timed out after 0.5 s at start"));
    remembered += r["status"].get<std::string>().find("not started again") != std::string::npos;
  }
  CHECK(remembered == 2);
  end_workers();
  fs::remove_all(dir);
}

TEST_CASE("issue 39 row 16: a daemon a worker started with setsid ends with the worker",
          "[experiment][worker]") {
  // `setsid` puts the sleep in a session and group of its own: killing the worker's group misses
  // it. The marker in its environment does not.
  const std::string seconds = std::to_string(3000 + ::getpid() % 1000) + ".5";
  const std::string argv = std::string("sleep") + '\0' + seconds + '\0';
  const std::string command =
      "setsid sleep " + seconds +
      R"( & echo '{"ready": true}' >&3; while read line; do echo '{"id": 1, "status": "skipped", "reason": "test"}' >&3; done)";
  const Config config = parse_config(
      R"({"name": "daemon", "axes": {"seq_len": [16], "head_dim": 8}, "variants": [{"name": "d",
      "external": {"worker": )" +
      Json(command).dump() + "}}]}");
  const fs::path dir = temp_dir("worker_daemon");
  run_experiment(config, make_plan(config), options_for(dir));
  // The daemon runs while its worker does. The worker says ready before `setsid` has necessarily
  // exec'd the sleep (a background job): wait for it, up to a deadline far beyond a fork and exec
  // on a loaded machine; no time is asserted.
  for (int i = 0; i < 200 && processes_with_cmdline(argv) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(processes_with_cmdline(argv) == 1);
  end_workers();
  CHECK(processes_with_cmdline(argv) == 0);
  fs::remove_all(dir);
}

TEST_CASE("issue 38 item 3: an external's env reaches its command and stays out of its key",
          "[hardening][external]") {
  const auto config_with = [](const std::string& greeting) {
    return parse_config(R"({"name": "env", "axes": {"seq_len": [16], "head_dim": 8},
        "variants": [{"name": "x", "env": {"GREETING": ")" +
                        greeting + R"("}, "external":
        "test \"$GREETING\" = hello && exit 77; exit 3; echo {inputs} {output}"}]})");
  };
  const Config hello = config_with("hello"), other = config_with("bye");
  CHECK(hello.variant_keys == other.variant_keys);
  CHECK(hello.points_hash == other.points_hash);
  const fs::path dir = temp_dir("env_var");
  run_experiment(hello, make_plan(hello), options_for(dir));
  const std::vector<Json> rows = file_rows(dir / "results.jsonl");
  REQUIRE(rows.size() == 1);
  // exit 77 is "cannot run here": the command saw GREETING=hello.
  CHECK_THAT(rows[0]["status"].get<std::string>(), Catch::StartsWith("skipped"));
  fs::remove_all(dir);
  CHECK_THROWS_WITH(parse_config(R"({"name": "e", "axes": {"seq_len": [16]}, "variants": [
      {"name": "x", "env": {"ATTNDEV_INPUTS": "x"}, "external": "c {inputs} {output}"}]})"),
                    Catch::Contains("variants[0].env.ATTNDEV_INPUTS"));
  CHECK_THROWS_WITH(parse_config(R"({"name": "e", "axes": {"seq_len": [16]}, "variants": [
      {"name": "x", "env": {"1X": "x"}, "external": "c {inputs} {output}"}]})"),
                    Catch::Contains("not a variable name"));
}
