// Shared by the experiment tests that run sweeps (the runner's, the external commands'): finding
// an interpreter, temporary folders, run options, reading rows back.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "experiment/runner.hpp"
#include "io/jsonl.hpp"

namespace attndev::test {

// The first of `candidates` that runs `python -c "<probe>"` successfully, or "".
inline std::string find_python(const std::vector<std::string>& candidates,
                               const std::string& probe) {
  for (const std::string& python : candidates) {
    if (python.empty()) continue;
    const std::string cmd = "'" + python + "' -c '" + probe + "' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return python;
  }
  return {};
}

inline std::filesystem::path temp_dir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("attndev_external_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

inline std::vector<io::Json> file_rows(const std::filesystem::path& file) {
  std::vector<io::Json> rows;
  for (const io::Json& r : io::read_jsonl(file).records)
    if (r["record"] == "row") rows.push_back(r);
  return rows;
}

// One thread, a fixed tool version: what the tests' runs compare across.
inline experiment::RunOptions options_for(const std::filesystem::path& dir) {
  experiment::RunOptions o;
  o.dir = dir;
  o.threads = 1;
  o.provenance.tool_version = "test";
  return o;
}

// Rows keyed by (point, variant) without the fields that legitimately differ between runs;
// REQUIREs that no key repeats.
inline std::map<std::string, io::Json> comparable(const std::vector<io::Json>& rows) {
  std::map<std::string, io::Json> out;
  for (io::Json row : rows) {
    row.erase("runtime_ms");
    row.erase("gflops");
    row.erase("tflops");
    const std::string key =
        row["point_id"].get<std::string>() + "/" + row["variant"].get<std::string>();
    REQUIRE(out.count(key) == 0);
    out[key] = row;
  }
  return out;
}

}  // namespace attndev::test
