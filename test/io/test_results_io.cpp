// Result writers: CSV round trip (RFC 4180 quoting), numbers that survive text, JSONL torn tails,
// atomic writes, markdown escaping.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.hpp"
#include "io/csv.hpp"
#include "io/json_values.hpp"
#include "io/jsonl.hpp"
#include "io/markdown.hpp"
#include "io/provenance.hpp"
#include "io/safe_open.hpp"

namespace fs = std::filesystem;
using namespace attndev::io;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("attndev_test_io_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("csv fields with commas, quotes and newlines parse back unchanged", "[io][csv]") {
  const std::vector<std::vector<std::string>> records = {
      {"variant", "status", "note"},
      {"flash2", "failed: bad \"tile\", d=7", "line1\nline2"},
      {"", "ok", "a,b"},
      {"\"", "\r\n", "plain"},
  };
  std::string text;
  for (const auto& r : records) text += csv_record(r);
  CHECK(text.find("\r\n") != std::string::npos);
  CHECK(parse_csv(text) == records);
}

TEST_CASE("csv parser rejects malformed quoting", "[io][csv]") {
  CHECK_THROWS_WITH(parse_csv("a,\"b\n"), Catch::Contains("unterminated"));
  CHECK_THROWS_WITH(parse_csv("a,b\"c\"\n"), Catch::Contains("quote inside"));
}

TEST_CASE("numbers survive text: shortest round trip, non-finite as strings", "[io][numbers]") {
  const std::uint64_t seed = 20240501;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (int i = 0; i < 2000; ++i) {
    const double x = std::pow(10.0, exponent(rng)) * (i % 2 ? -1 : 1);
    const std::string text = format_number(x);
    CHECK(std::stod(text) == x);
    double back = 0;
    REQUIRE(json_to_double(Json::parse(number_json(x).dump()), back));
    CHECK(back == x);
  }
  for (double x :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    const Json j = number_json(x);
    REQUIRE(j.is_string());
    CHECK(j.dump() != "null");
    double back = 0;
    REQUIRE(json_to_double(j, back));
    CHECK((std::isnan(x) ? std::isnan(back) : back == x));
  }
  CHECK(format_number(std::numeric_limits<double>::denorm_min()) == "5e-324");
  double out = 0;
  CHECK_FALSE(json_to_double(Json(nullptr), out));
  CHECK_FALSE(json_to_double(Json("fast"), out));
}

TEST_CASE("jsonl reader drops a torn final line and counts corrupt lines", "[io][jsonl]") {
  const fs::path dir = temp_dir("jsonl");
  const fs::path file = dir / "r.jsonl";
  {
    JsonlAppender out(file);
    out.append({Json{{"a", 1}}, Json{{"a", 2}}});
    out.append({Json{{"a", number_json(NAN)}}});
  }
  {
    std::ofstream app(file, std::ios::app | std::ios::binary);
    app << "not json\n{\"a\": 4, \"torn";
  }
  const JsonlContents c = read_jsonl(file);
  REQUIRE(c.records.size() == 3);
  CHECK(c.records[2]["a"] == "nan");
  CHECK(c.torn_tail);
  CHECK(c.bad_lines == 1);
  CHECK(c.first_bad_line == 4);
  CHECK(read_jsonl(dir / "missing.jsonl").records.empty());
  fs::remove_all(dir);
}

TEST_CASE("atomic write replaces the whole file and leaves no temporary", "[io][atomic]") {
  const fs::path dir = temp_dir("atomic");
  const fs::path file = dir / "t.txt";
  write_file_atomic(file, "first version, longer than the second\n");
  write_file_atomic(file, "second\n");
  CHECK(read_file(file) == "second\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);
  CHECK_THROWS_WITH(write_file_atomic(dir / "no" / "such" / "dir.txt", "x"),
                    Catch::Contains("cannot create"));
  fs::remove_all(dir);
}

TEST_CASE("read_file stops at its size limit and refuses devices and folders", "[io][atomic]") {
  const fs::path dir = temp_dir("read_limit");
  const fs::path file = dir / "c.json";
  write_file_atomic(file, std::string(1000, 'x'));
  CHECK(read_file(file, 1000).size() == 1000);  // exactly at the limit: read whole
  CHECK_THROWS_WITH(read_file(file, 999), Catch::Contains("larger than 999 bytes"));
  // Larger than one read buffer: the limit holds across chunks, not only within one.
  write_file_atomic(file, std::string(200000, 'y'));
  CHECK_THROWS_WITH(read_file(file, 150000), Catch::Contains("larger than 150000 bytes"));
  CHECK(read_file(file, 200000).size() == 200000);
  CHECK_THROWS_WITH(read_file("/dev/zero", 1 << 20), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(read_file(dir), Catch::Contains("a folder"));
  fs::remove_all(dir);
}

TEST_CASE("an atomic write to a device goes through it, never replacing it", "[io][atomic]") {
  const fs::path dir = temp_dir("special");
  fs::create_symlink("/dev/null", dir / "sink");
  CHECK(is_special_file(dir / "sink"));
  CHECK_FALSE(is_special_file(dir));
  write_file_atomic(dir / "sink", "discarded\n");
  CHECK(fs::is_symlink(dir / "sink"));
  CHECK(fs::is_character_file(dir / "sink"));
  fs::create_symlink("/dev/full", dir / "full");
  CHECK_THROWS_WITH(write_file_atomic(dir / "full", "x"), Catch::Contains("No space left"));
  CHECK(fs::is_symlink(dir / "full"));
  fs::remove_all(dir);
}

TEST_CASE("markdown tables escape pipes and align numeric columns right", "[io][markdown]") {
  const std::string md = markdown_table({"variant", "max_abs"}, {{"a|b", "1e-3"}, {"c\nd", "nan"}});
  CHECK(md.find("a\\|b") != std::string::npos);
  CHECK(md.find("c d") != std::string::npos);
  CHECK(md.find("| --- | ---: |") != std::string::npos);
}

TEST_CASE("provenance quotes the command line so it can be pasted back", "[io][provenance]") {
  const char* argv[] = {"attndev", "run", "-a", "seq_len=[512, 1024]", "it's"};
  CHECK(quote_command_line(5, argv) == "attndev run -a 'seq_len=[512, 1024]' 'it'\\''s'");
}

TEST_CASE("collect_provenance fills every field, the tool identity included", "[io][provenance]") {
  ::setenv("SLURM_ARRAY_TASK_ID", "7", 1);
  const Provenance p = collect_provenance();
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  CHECK(p.tool_version == tool_version());
  CHECK_FALSE(p.tool_version.empty());
  CHECK_FALSE(p.git_revision.empty());
  CHECK_FALSE(p.compiler.empty());
  // This test binary's own command line, as /proc/self/cmdline has it.
  CHECK_THAT(p.command_line, Catch::Contains("io_tests"));
  CHECK_FALSE(p.cpu_model.empty());
  CHECK_FALSE(p.hostname.empty());
  CHECK(p.time_utc.size() == 20);
  CHECK(p.time_utc.back() == 'Z');
  CHECK(p.gpu == "none");
  CHECK(p.slurm_array_task_id == "7");
  const Json j = to_json(p);
  for (const char* key :
       {"tool_version", "git_revision", "compiler", "command_line", "cpu_model", "gpu", "hostname",
        "time_utc", "slurm_job_id", "slurm_array_job_id", "slurm_array_task_id"})
    CHECK(j.contains(key));
  CHECK(j.size() == 11);
}

TEST_CASE("appending to a file with another hard link leaves the other name unchanged",
          "[io][atomic][links]") {
  const fs::path dir = temp_dir("hardlink");
  write_file_atomic(dir / "results.jsonl", "{\"a\": 1}\n");
  fs::create_hard_link(dir / "results.jsonl", dir / "backup.jsonl");
  {
    JsonlAppender out(dir / "results.jsonl");
    out.append({Json{{"b", 2}}});
  }
  CHECK(read_file(dir / "backup.jsonl") == "{\"a\": 1}\n");
  CHECK(read_file(dir / "results.jsonl") == "{\"a\": 1}\n{\"b\":2}\n");
  CHECK(fs::hard_link_count(dir / "results.jsonl") == 1);
  fs::remove_all(dir);
}

TEST_CASE("a FIFO under an output name is refused at once, never waited on",
          "[io][atomic][links]") {
  const fs::path dir = temp_dir("fifo");
  REQUIRE(::mkfifo((dir / "summary.md").c_str(), 0644) == 0);
  CHECK_THROWS_WITH(write_file_atomic(dir / "summary.md", "x"),
                    Catch::Contains("a FIFO that no process reads"));
  CHECK_THROWS_WITH(require_regular_or_absent(dir / "summary.md"), Catch::Contains("a FIFO"));
  fs::create_symlink(dir, dir / "loop");
  CHECK_THROWS_WITH(create_owned_directory(dir / "loop"), Catch::Contains("a symbolic link"));
  create_owned_directory(dir / "fresh");
  create_owned_directory(dir / "fresh");  // a real folder is fine twice
  CHECK(fs::is_directory(dir / "fresh"));
  fs::remove_all(dir);
}
