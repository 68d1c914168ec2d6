#include "io/jsonl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "io/atomic_file.hpp"
#include "io/json_strict.hpp"
#include "io/safe_open.hpp"

namespace attndev::io {

JsonlAppender::JsonlAppender(const std::filesystem::path& path) : path_(path) {
  fd_ = open_regular_file(path, O_WRONLY | O_CREAT | O_APPEND);
}

JsonlAppender::~JsonlAppender() {
  close();
}

void JsonlAppender::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string jsonl_line(const Json& record) {
  // error_handler_t::replace: a stray invalid UTF-8 byte in a message must not abort the run.
  return record.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void JsonlAppender::append(const std::vector<Json>& records) {
  if (fd_ < 0) throw std::runtime_error("results file " + path_.string() + " is not open");
  std::string text;
  for (const Json& r : records) {
    text += jsonl_line(r);
    text += '\n';
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot append to " + path_.string() + ": " + std::strerror(errno));
    }
    written += static_cast<std::size_t>(n);
  }
}

JsonlContents read_jsonl(const std::filesystem::path& path) {
  JsonlContents out;
  const std::string text = read_regular_file(path);
  std::size_t pos = 0;
  std::size_t line_number = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    ++line_number;
    if (end == std::string::npos) {
      out.torn_tail = true;
      break;
    }
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    Json record = json_text_error(line)
                      ? Json(nullptr)
                      : Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded() || !record.is_object()) {
      if (out.bad_lines++ == 0) out.first_bad_line = line_number;
      out.bad_line_numbers.push_back(line_number);
      continue;
    }
    out.records.push_back(std::move(record));
    out.line_numbers.push_back(line_number);
  }
  return out;
}

}  // namespace attndev::io
