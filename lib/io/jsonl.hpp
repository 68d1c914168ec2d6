// JSON Lines: the streamed source of truth of a run.
//
// Invariant: a record is on disk only when its whole line, newline included, is. The appender
// writes all lines of one point with a single write() and flushes, so a SIGKILL can tear at most
// the final line; the reader drops an unterminated final line instead of failing.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "io/json_values.hpp"

namespace attndev::io {

class JsonlAppender {
 public:
  JsonlAppender() = default;
  explicit JsonlAppender(const std::filesystem::path& path);
  ~JsonlAppender();
  JsonlAppender(const JsonlAppender&) = delete;
  JsonlAppender& operator=(const JsonlAppender&) = delete;

  // Appends the records as one write and flushes it to the kernel (survives SIGKILL of this
  // process). Throws std::runtime_error on I/O errors.
  void append(const std::vector<Json>& records);
  void close();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

struct JsonlContents {
  std::vector<Json> records;
  std::vector<std::size_t> line_numbers;  // 1-based line of each record
  bool torn_tail = false;                 // last line had no newline (dropped)
  std::size_t bad_lines = 0;              // complete lines that were not a JSON object (dropped)
  std::size_t first_bad_line = 0;
  std::vector<std::size_t> bad_line_numbers;  // 1-based, every bad line
};

// Missing file -> empty contents.
JsonlContents read_jsonl(const std::filesystem::path& path);

// One record as its line (no newline).
std::string jsonl_line(const Json& record);

}  // namespace attndev::io
