// Hostile and unlucky input through the attndev binary, as a careless user or a crashed machine
// produces it: every case ends in a clear message and a documented exit code, never a crash, a
// hang or a lost result (issue "Reliability").
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/npy.hpp"
#include "spawn.hpp"
#include "build_paths.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace attndev::test;

namespace {

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

const char* kTiny = R"({
  "name": "tiny",
  "axes": {"seq_len": [32, 48], "head_dim": 16, "block_c": 16},
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"}
  ]
})";

}  // namespace

TEST_CASE("JSON nested 100000 deep is refused on every input, never a stack overflow",
          "[cli][hostile][json]") {
  const std::string deep = nested(100000);
  const std::string tiny_variants =
      R"("axes": {"seq_len": [32]}, "variants": [{"algorithm": "flash2", "policy": "fp32"}])";

  SECTION("a config") {
    const fs::path cfg =
        write_config("deep", R"({"name": "deep", "_x": )" + deep + ", " + tiny_variants + "}");
    for (const char* command : {"validate", "run", "plan"}) {
      std::vector<std::string> args = {command, cfg.string()};
      if (std::string(command) == "run")
        args.insert(args.end(), {"-o", (work_dir() / "deep_out").string()});
      const Result r = run_cli(args);
      INFO(command << ": " << r.err);
      CHECK(r.signal == 0);
      CHECK(r.code == 2);
      CHECK_THAT(r.err, Catch::Contains("nested deeper than"));
    }
    CHECK_FALSE(fs::exists(work_dir() / "deep_out"));
  }
  SECTION("an -a override") {
    const fs::path cfg = write_config("ok", R"({"name": "ok", )" + tiny_variants + "}");
    const Result r = run_cli({"validate", cfg.string(), "-a", "seq_len=" + nested(60000)});
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("nested deeper than"));
  }
  SECTION("a --policy object") {
    const Result r =
        run_cli({"point", "--n", "16", "--d", "8", "--policy", R"({"_x": )" + nested(60000) + "}"});
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("nested deeper than"));
  }
  SECTION("a training config") {
    const std::string text = slurp(ATTNDEV_SOURCE_DIR + "/configs/train/tiny-flash2.json");
    const fs::path cfg =
        write_config("deep_train", "{\"_x\": " + deep + "," + text.substr(text.find('{') + 1));
    const Result r = run_cli({"train", cfg.string(), "-o", (work_dir() / "deep_train").string()});
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("nested deeper than"));
    CHECK_FALSE(fs::exists(work_dir() / "deep_train"));
  }
  SECTION("run.json and a results line of a results folder") {
    const fs::path cfg = write_config("tiny_deep", kTiny);
    const fs::path dir = work_dir() / "tiny_deep";
    const Result first = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
    INFO(first.err);
    REQUIRE(first.code == 0);
    // A row line that is valid JSON, nested deep inside: treated as a bad line, the folder stays
    // usable.
    std::string rows = slurp(dir / "results.jsonl");
    const std::string row = rows.substr(rows.find("{\"record\":\"row\""));
    const std::string bad_row = row.substr(0, row.find('\n') - 1) + ", \"_x\": " + deep + "}\n";
    write_text(dir / "results.jsonl", rows + bad_row);
    const Result rep = run_cli({"report", dir.string(), "--no-summary"});
    INFO(rep.err);
    CHECK(rep.signal == 0);
    CHECK(rep.code == 0);
    const Result again = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
    INFO(again.err);
    CHECK(again.signal == 0);
    CHECK(again.code == 0);

    const std::string manifest = slurp(dir / "run.json");
    write_text(dir / "run.json",
               manifest.substr(0, manifest.rfind('}')) + ", \"_x\": " + deep + "}\n");
    for (const char* command : {"report", "merge"}) {
      const Result r = run_cli({command, dir.string()});
      INFO(command << ": " << r.err);
      CHECK(r.signal == 0);
      CHECK(r.code == 2);
      CHECK_THAT(r.err, Catch::Contains("nested deeper than"));
    }
    const Result run = run_cli({"run", cfg.string(), "-o", dir.string()});
    CHECK(run.signal == 0);
    CHECK(run.code == 2);
  }
  SECTION("a safetensors header") {
    const std::string header = R"({"__metadata__": {"x": "y"}, "_x": )" + deep + "}";
    std::string file(8, '\0');
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    file += header;
    const fs::path st = work_dir() / "deep.safetensors";
    write_text(st, file);
    const Result r = run_cli({"wdist", st.string(), st.string()});
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("nested deeper than"));
  }
}

TEST_CASE("sizes that overflow or exceed memory exit 2 naming the bytes, before allocating",
          "[cli][hostile][memory]") {
  const std::vector<std::string> huge = {"--batch", "65536",   "--heads", "65536",
                                         "--n",     "1048576", "--d",     "1048576"};
  SECTION("point and bench with B*H*N*d past 2^64") {
    for (const char* command : {"point", "bench"}) {
      std::vector<std::string> args = {command};
      args.insert(args.end(), huge.begin(), huge.end());
      const Result r = run_cli(args);
      INFO(command << ": " << r.err);
      CHECK(r.signal == 0);
      CHECK(r.code == 2);
      CHECK_THAT(r.err, Catch::Contains("more than 2^64 bytes"));
    }
  }
  SECTION("point within size_t but beyond the memory available") {
    const Result r = run_cli({"point", "--n", "512", "--d", "64"}, {"ATTNDEV_MEMORY_LIMIT=100000"});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("needs about"));
    CHECK_THAT(r.err, Catch::Contains("97.7 KiB (100000 bytes) of memory is available"));
    CHECK(r.out.empty());
  }
  SECTION("a config that validates but cannot run: run refuses before writing, plan shows it") {
    const fs::path cfg = write_config(
        "huge", R"({"name": "huge", "axes": {"batch": 65536, "heads": 65536, "seq_len": 1048576,
                 "head_dim": 1048576}, "variants": [{"algorithm": "flash2", "policy": "fp32"}]})");
    const fs::path out = work_dir() / "huge_out";
    const Result r = run_cli({"run", cfg.string(), "-o", out.string()});
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("more than 2^64 bytes"));
    CHECK_FALSE(fs::exists(out));
    const Result p = run_cli({"plan", cfg.string(), "--no-estimate"});
    INFO(p.err);
    CHECK(p.code == 0);
    CHECK_THAT(p.out, Catch::Contains("peak memory: more than 2^64 bytes"));
    CHECK_THAT(p.out, Catch::Contains("`attndev run` would refuse it"));
    const fs::path tiny = write_config("tiny_mem", kTiny);
    const Result t = run_cli({"plan", tiny.string(), "--no-estimate"});
    CHECK_THAT(t.out, Catch::Contains("peak memory: "));
    CHECK_THAT(t.out, Catch::Contains(" available"));
  }
  SECTION("train and wdist check before allocating") {
    const fs::path out = work_dir() / "train_mem";
    const Result t = run_cli(
        {"train", ATTNDEV_SOURCE_DIR + "/configs/train/tiny-flash2.json", "-o", out.string()},
        {"ATTNDEV_MEMORY_LIMIT=1000000"});
    INFO(t.err);
    CHECK(t.code == 2);
    CHECK_THAT(t.err, Catch::Contains("training run tiny-flash2 needs about"));
    CHECK_FALSE(fs::exists(out));
    const std::string a = ATTNDEV_SOURCE_DIR + "/test/data/wdist/pair_a.safetensors";
    const std::string b = ATTNDEV_SOURCE_DIR + "/test/data/wdist/pair_b.safetensors";
    const Result w = run_cli({"wdist", a, b}, {"ATTNDEV_MEMORY_LIMIT=100"});
    INFO(w.err);
    CHECK(w.code == 2);
    CHECK_THAT(w.err, Catch::Contains("needs about"));
  }
}

namespace {

// Long enough (several seconds at -j 1) that a second command lands while the first writes.
const char* kSlow = R"({
  "name": "slow",
  "axes": {"seq_len": [192, 256, 320, 384], "head_dim": 32, "block_r": [16, 32], "block_c": [16, 32, 64]},
  "trials": 3,
  "variants": [
    {"name": "base", "algorithm": "baseline", "policy": "torch-math-bf16", "baseline": true},
    {"name": "flash", "algorithm": "flash2", "policy": "kernel-bf16"},
    {"name": "flash-fp16", "algorithm": "flash2", "policy": "kernel-fp16"}
  ]
})";
constexpr std::size_t kSlowRows = 72 * 3;

std::string pid_text(pid_t pid) {
  return "pid " + std::to_string(pid);
}

}  // namespace

TEST_CASE(
    "one writer per results file: a second run, --force-new, report and merge are refused "
    "while a run writes",
    "[cli][concurrency]") {
  const fs::path cfg = write_config("slow", kSlow);
  const fs::path other = write_config(
      "slow_other",
      std::string(kSlow).replace(std::string(kSlow).find("\"trials\": 3"), 11, "\"trials\": 2"));
  const fs::path dir = work_dir() / "slow";
  const Child first = spawn_attndev(
      work_dir(), {"run", cfg.string(), "-o", dir.string(), "-j", "1", "--no-summary"});
  REQUIRE(wait_until([&] { return count_rows(dir / "results.jsonl") >= 3; }));
  // Stopped mid-run (holding whatever it holds), so that the commands below certainly overlap it.
  REQUIRE(::kill(first.pid, SIGSTOP) == 0);

  const Result second = run_cli({"run", cfg.string(), "-o", dir.string(), "-j", "1"});
  INFO("second run: " << second.err);
  CHECK(second.code == 2);
  CHECK_THAT(second.err, Catch::Contains(pid_text(first.pid)));
  const Result force = run_cli({"run", other.string(), "-o", dir.string(), "--force-new"});
  INFO("--force-new: " << force.err);
  CHECK(force.code == 2);
  CHECK_THAT(force.err, Catch::Contains(pid_text(first.pid)));
  const Result report = run_cli({"report", dir.string(), "--no-summary"});
  INFO("report: " << report.err);
  CHECK(report.code == 2);
  CHECK_THAT(report.err, Catch::Contains(pid_text(first.pid)));
  const Result merge = run_cli({"merge", dir.string()});
  INFO("merge: " << merge.out << merge.err);
  CHECK(merge.code == 2);
  CHECK_THAT(merge.err, Catch::Contains(pid_text(first.pid)));

  REQUIRE(::kill(first.pid, SIGCONT) == 0);
  const Result done = wait_for(first);
  INFO("first run: " << done.err);
  CHECK(done.code == 0);
  // Nothing of the refused commands reached the folder: every row once, none deleted.
  CHECK(count_rows(dir / "results.jsonl") == kSlowRows);
  const Result again = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
  CHECK(again.code == 0);
  CHECK(count_rows(dir / "results.jsonl") == kSlowRows);
}

TEST_CASE("shards of one folder still run at the same time, each in its own file",
          "[cli][concurrency][shards]") {
  const fs::path cfg = write_config("slow_shards", kSlow);
  const fs::path dir = work_dir() / "slow_shards";
  const Child s0 = spawn_attndev(
      work_dir(), {"run", cfg.string(), "-o", dir.string(), "--shard", "0/2", "-j", "1"});
  REQUIRE(wait_until([&] { return count_rows(dir / "results.shard-0-of-2.jsonl") > 0; }));
  // Shard 1 runs start to end while shard 0 is stopped mid-run: it neither waits for shard 0 nor
  // is refused by it.
  REQUIRE(::kill(s0.pid, SIGSTOP) == 0);
  const Result r1 = run_cli({"run", cfg.string(), "-o", dir.string(), "--shard", "1/2", "-j", "1"});
  REQUIRE(::kill(s0.pid, SIGCONT) == 0);
  const Result r0 = wait_for(s0);
  INFO(r0.err << r1.err);
  CHECK(r0.code == 0);
  CHECK(r1.code == 0);
  const Result merged = run_cli({"merge", dir.string()});
  INFO(merged.out << merged.err);
  CHECK(merged.code == 0);
  CHECK(count_rows(dir / "results.jsonl") == kSlowRows);
}

TEST_CASE("report never replaces tables with fewer rows than they hold", "[cli][report]") {
  const fs::path cfg = write_config("tiny_report", kTiny);
  static int section_run = 0;  // Catch2 reruns the case once per SECTION: a fresh folder each
  const fs::path dir = work_dir() / ("tiny_report" + std::to_string(++section_run));
  REQUIRE(run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"}).code == 0);
  const std::string csv = slurp(dir / "results.csv"), doc = slurp(dir / "results.json");
  REQUIRE(std::count(csv.begin(), csv.end(), '\n') == 5);  // header + 2 points x 2 variants

  SECTION("the source is gone") {
    fs::remove(dir / "results.jsonl");
    const Result r = run_cli({"report", dir.string(), "--no-summary"});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("4 rows"));
    CHECK_THAT(r.err, Catch::Contains("0"));
  }
  SECTION("the source lost a point") {
    const std::string jsonl = slurp(dir / "results.jsonl");
    // Keep the run record and the first point's two rows.
    std::size_t end = 0;
    for (int line = 0; line < 3; ++line) end = jsonl.find('\n', end) + 1;
    write_text(dir / "results.jsonl", jsonl.substr(0, end));
    const Result r = run_cli({"report", dir.string(), "--no-summary"});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("2 rows"));
  }
  CHECK(slurp(dir / "results.csv") == csv);
  CHECK(slurp(dir / "results.json") == doc);
}

TEST_CASE("a malformed row in the middle of results.jsonl is rerun with a warning naming its line",
          "[cli][corruption]") {
  const fs::path cfg = write_config("tiny_corrupt", kTiny);
  static int section_run = 0;  // Catch2 reruns the case once per SECTION: a fresh folder each
  const fs::path dir = work_dir() / ("tiny_corrupt" + std::to_string(++section_run));
  REQUIRE(run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"}).code == 0);
  const std::string csv = slurp(dir / "results.csv");
  std::vector<std::string> lines;
  {
    std::istringstream in(slurp(dir / "results.jsonl"));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  REQUIRE(lines.size() == 5);  // run record + 4 rows
  SECTION("valid JSON, status ok, no metrics") {
    json row = json::parse(lines[2]);
    for (const char* m : {"max_abs", "mean_abs", "std_abs", "rmse", "rel_l2", "max_rel", "cos_sim"})
      row.erase(m);
    lines[2] = row.dump();
  }
  SECTION("a metric of the wrong type") {
    json row = json::parse(lines[2]);
    row["max_abs"] = json::array({1, 2});
    lines[2] = row.dump();
  }
  SECTION("a point index outside the plan") {
    json row = json::parse(lines[2]);
    row["point_index"] = 99999999;
    lines[2] = row.dump();
  }
  SECTION("not JSON at all") {
    lines[2] = "{\"record\":\"row\", garbage";
  }
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  write_text(dir / "results.jsonl", text);

  const Result rep = run_cli({"report", dir.string(), "--no-summary"});
  INFO("report: " << rep.err);
  CHECK(rep.signal == 0);
  CHECK(rep.code == 2);  // one point fewer than the tables hold: refused, tables kept
  CHECK(slurp(dir / "results.csv") == csv);

  const Result r = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
  INFO("run: " << r.out << r.err);
  CHECK(r.signal == 0);
  CHECK(r.code == 0);
  CHECK_THAT(r.out + r.err, Catch::Contains("results.jsonl:3"));
  CHECK_THAT(r.out + r.err, Catch::Contains("1 run now"));
  // Every row once, each ok row with its metrics.
  std::istringstream in(slurp(dir / "results.jsonl"));
  std::size_t rows = 0;
  std::set<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j["record"] != "row") continue;
    ++rows;
    keys.insert(j["point_id"].get<std::string>() + "/" + j["variant"].get<std::string>());
    CHECK(j["status"] == "ok");
    CHECK(j["max_abs"].is_number());
  }
  CHECK(rows == 4);
  CHECK(keys.size() == 4);
  const Result again = run_cli({"report", dir.string(), "--no-summary"});
  CHECK(again.code == 0);
}

namespace {

// Runs `sh -c SCRIPT` (ATTNDEV in it names the binary); exit code or signal, stderr.
Result run_shell(const std::string& script) {
  const fs::path err = work_dir() / "shell.err";
  const std::string binary = ATTNDEV_BINARY_DIR + "/apps/attndev/attndev";
  std::string s = script;
  for (std::size_t at; (at = s.find("ATTNDEV")) != std::string::npos;)
    s.replace(at, 7, "'" + binary + "'");
  const std::string cmd = "sh -c \"" + s + "\" >/dev/null 2>'" + err.string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  Result r;
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.err = slurp(err);
  return r;
}

// A cap on the address space of the command under test, so that a regression to reading an
// endless device cannot take the machine's memory with it (not under ASan, which reserves more).
// (GCC says __SANITIZE_ADDRESS__; clang, the sanitizer build's compiler, says it through
// __has_feature.)
#if defined(__SANITIZE_ADDRESS__)
#define ATTNDEV_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNDEV_TEST_UNDER_ASAN 1
#endif
#endif
std::string memory_cap() {
#if defined(ATTNDEV_TEST_UNDER_ASAN)
  return "";
#else
  return "ulimit -v 4000000; ";
#endif
}

}  // namespace

TEST_CASE(
    "a full, unwritable or endless output or input: a clear error, nothing lost, the rerun "
    "completes",
    "[cli][io]") {
  const fs::path cfg = write_config("tiny_io", kTiny);
  static int section_run = 0;
  const fs::path dir = work_dir() / ("tiny_io" + std::to_string(++section_run));

  SECTION("an output folder that cannot be created (even by root)") {
    const fs::path out = "/proc/attndev-cannot-create/out";
    const Result r = run_cli({"run", cfg.string(), "-o", out.string()});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err,
               Catch::Contains("cannot create the output folder /proc/attndev-cannot-create"));
  }
  SECTION("results.jsonl on a device that is always full") {
    fs::create_directories(dir);
    fs::create_symlink("/dev/full", dir / "results.jsonl");
    const Result r = run_shell(memory_cap() + "exec ATTNDEV run '" + cfg.string() + "' -o '" +
                               dir.string() + "' --no-summary");
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("results.jsonl"));
    CHECK_THAT(r.err, Catch::Contains("not a regular file"));
    fs::remove(dir / "results.jsonl");
    CHECK(run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"}).code == 0);
    CHECK(count_rows(dir / "results.jsonl") == 4);
  }
  SECTION("the disk fills in the middle of a run (a file size limit, which binds root too)") {
    const Result r = run_shell("ulimit -f 4; trap '' XFSZ; exec ATTNDEV run '" + cfg.string() +
                               "' -o '" + dir.string() + "' --no-summary");
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("File too large"));
    const Result again = run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"});
    INFO(again.err);
    CHECK(again.code == 0);
    CHECK(count_rows(dir / "results.jsonl") == 4);  // the torn point rerun, nothing twice
  }
  SECTION("a config read from an endless device") {
    const Result r = run_shell(memory_cap() + "exec ATTNDEV validate /dev/zero");
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("not a regular file"));
  }
  SECTION("a table written through a link to a full device is not replaced by a file") {
    fs::create_directories(dir);
    fs::create_symlink("/dev/full", dir / "w1.csv");
    const std::string a = ATTNDEV_SOURCE_DIR + "/test/data/wdist/pair_a.safetensors";
    const std::string b = ATTNDEV_SOURCE_DIR + "/test/data/wdist/pair_b.safetensors";
    const Result r = run_cli({"wdist", a, b, "--csv", (dir / "w1.csv").string()});
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("No space left on device"));
    CHECK(fs::is_symlink(dir / "w1.csv"));
  }
}

TEST_CASE("match refuses a non-finite output, as run fails one", "[cli][hardening][match]") {
  const fs::path dir = work_dir() / "match_nan";
  fs::create_directories(dir / "inputs");
  for (const char* name : {"q", "k", "v"})
    attndev::io::write_npy(dir / "inputs" / (std::string(name) + ".npy"),
                           {name, attndev::io::DType::f32, {8, 4}, std::vector<double>(32, 0.5)});
  attndev::io::write_npy(
      dir / "o.npy", {"o", attndev::io::DType::f32, {8, 4}, std::vector<double>(32, std::nan(""))});
  const Result r =
      run_cli({"match", (dir / "o.npy").string(), "--inputs", (dir / "inputs").string()});
  INFO(r.out << r.err);
  CHECK(r.signal == 0);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("32 NaN") && Catch::Contains("first at flat index 0"));
}

namespace {

// Gone, or a zombie that only waits for its new parent to reap it.
bool process_ended(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return true;
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && stat.compare(close + 2, 1, "Z") == 0;
}

// Runs a one-variant config whose external `command` writes the pid of a long-lived process to
// `{pid_file}` (replaced by the file's path), SIGKILLs attndev once the pid is there, and checks
// that process ends within 10 s (killed, if not, so that a failure leaves nothing behind).
void check_ends_with_attndev(const std::string& name, std::string command) {
  const fs::path pid_file = work_dir() / (name + ".pid");
  fs::remove(pid_file);
  command.replace(command.find("{pid_file}"), 10, pid_file.string());
  const fs::path cfg = write_config(name, R"({"name": ")" + name + R"(",
    "axes": {"seq_len": 16, "head_dim": 8},
    "variants": [{"name": "ext", "external": ")" +
                                              command + R"("}]})");
  const Child c = spawn_cli({"run", cfg.string(), "-o", (work_dir() / (name + "_out")).string()});
  REQUIRE(wait_until([&] { return fs::exists(pid_file) && fs::file_size(pid_file) > 0; }));
  long pid = 0;
  std::ifstream(pid_file) >> pid;
  REQUIRE(pid > 0);
  ::kill(c.pid, SIGKILL);
  const Result r = wait_for(c);
  CHECK(r.signal == SIGKILL);
  const auto ended = [&] { return process_ended(pid); };
  CHECK(wait_until(ended, 10));
  if (!ended()) ::kill(static_cast<pid_t>(pid), SIGKILL);
}

}  // namespace

TEST_CASE("an external command dies with attndev, even when attndev is SIGKILLed",
          "[cli][hardening][external]") {
  check_ends_with_attndev("ext_sleep",
                          "exec sh -c 'echo $$ > {pid_file}; exec sleep 60' {inputs} {output}");
}

TEST_CASE("an external command's own children die with attndev when it is SIGKILLed",
          "[cli][hardening][external]") {
  // The sleep is the command's child, not the process attndev started: only a guardian that
  // kills the whole group reaches it (the kernel's parent-death signal goes to one process).
  check_ends_with_attndev("ext_grandchild",
                          "sleep 60 & echo $! > {pid_file}; wait; true {inputs} {output}");
}

TEST_CASE("report --metric picks the summary's columns without a rerun",
          "[cli][hardening][report]") {
  const fs::path cfg = write_config("tiny_metric", kTiny);
  const fs::path dir = work_dir() / "tiny_metric";
  REQUIRE(run_cli({"run", cfg.string(), "-o", dir.string(), "--no-summary"}).code == 0);
  const Result r = run_cli({"report", dir.string(), "--metric", "mean_abs"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(slurp(dir / "summary.md"), Catch::Contains("mean_abs"));
  const Result bad = run_cli({"report", dir.string(), "--metric", "mean_ab"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--metric") && Catch::Contains("mean_abs"));
  // Editing `metrics` or `description` keeps the folder: the same rows, no rerun.
  std::string text = kTiny;
  text.insert(text.find("\"axes\""), R"("description": "d", "metrics": ["rmse"], )");
  const Result rerun = run_cli(
      {"run", write_config("tiny_metric2", text).string(), "-o", dir.string(), "--no-summary"});
  INFO(rerun.err);
  CHECK(rerun.code == 0);
  CHECK_THAT(rerun.out + rerun.err, Catch::Contains("0 run now"));
}
