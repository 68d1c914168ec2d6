// Shared by the tests that run external commands: finding an interpreter, temporary folders,
// reading rows back.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace attndev::test
