#include "io/json_depth.hpp"

namespace attndev::io {

std::optional<std::string> json_depth_error(std::string_view text, std::size_t limit,
                                            bool comments) {
  std::size_t depth = 0, line = 1, column = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (comments && c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      const bool block = text[i + 1] == '*';
      const std::size_t end = block ? text.find("*/", i + 2) : text.find('\n', i + 2);
      if (end == std::string_view::npos) return std::nullopt;  // unterminated: the parser's job
      for (std::size_t j = i + 1; j < end; ++j) {
        if (text[j] == '\n') {
          ++line;
          column = 0;
        } else {
          ++column;
        }
      }
      i = block ? end + 1 : end - 1;  // a line comment's newline is counted by the loop
      if (block) column += 2;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit)
        return "nested deeper than " + std::to_string(limit) +
               " levels of arrays/objects (at line " + std::to_string(line) + ", column " +
               std::to_string(column) + ")";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace attndev::io
