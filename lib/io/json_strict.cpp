#include "io/json_strict.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace attndev::io {

namespace {

struct Position {
  std::size_t line = 1, column = 1;
  std::string text() const {
    std::string out = "line ";
    out.append(std::to_string(line)).append(", column ").append(std::to_string(column));
    return out;
  }
};

struct Key {
  std::string name;  // unescaped
  Position at;
};

// One open array or object. A key is the string that follows '{' or ',' in an object.
struct Frame {
  bool object = false;
  bool expect_key = false;
  std::size_t index = 0;  // arrays: the element being read
  std::string key;        // objects: the key whose value is being read
  std::vector<Key> keys;
};

// The JSON path of the value being read in the innermost frame: `axes.seq_len`, `variants[1]`.
std::string path_of(const std::vector<Frame>& stack) {
  std::string path;
  for (const Frame& f : stack) {
    if (f.object) {
      if (!path.empty()) path += '.';
      path += f.key;
    } else {
      path.append("[").append(std::to_string(f.index)).append("]");
    }
  }
  return path;
}

// The first (in text order) key of a closing object that an earlier key already named.
std::optional<std::string> duplicate_in(std::vector<Frame>& stack) {
  std::vector<Key>& keys = stack.back().keys;
  if (keys.size() < 2) return std::nullopt;
  std::vector<std::size_t> order(keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a].name < keys[b].name; });
  std::size_t first = 0, second = keys.size();
  for (std::size_t i = 1; i < order.size(); ++i)
    if (keys[order[i]].name == keys[order[i - 1]].name && order[i] < second) {
      first = order[i - 1];
      second = order[i];
    }
  if (second == keys.size()) return std::nullopt;
  stack.back().key = keys[second].name;
  // Appended piece by piece: a chain of operator+ here trips GCC 12's false -Wrestrict once
  // inlined (GCC bug 105329).
  std::string message = "ambiguous: key \"";
  message.append(keys[second].name).append("\" appears twice in one object (");
  message.append(path_of(stack)).append(" at ").append(keys[second].at.text());
  message.append(", first at ").append(keys[first].at.text());
  message.append("); JSON readers disagree on which one counts, so neither is taken: keep one");
  return message;
}

// The unescaped text of the string whose opening quote is at `open` and closing quote at `close`.
std::string unescape(std::string_view text, std::size_t open, std::size_t close) {
  const std::string_view raw = text.substr(open, close - open + 1);
  if (raw.find('\\') == std::string_view::npos) return std::string(raw.substr(1, raw.size() - 2));
  const nlohmann::json value = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  return value.is_string() ? value.get<std::string>() : std::string(raw);
}

}  // namespace

std::optional<std::string> json_duplicate_key_error(std::string_view text, bool comments) {
  std::vector<Frame> stack;
  Position pos;
  const auto advance = [&](char c) {
    if (c == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  };
  for (std::size_t i = 0; i < text.size(); advance(text[i]), ++i) {
    const char c = text[i];
    if (comments && c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      const bool block = text[i + 1] == '*';
      const std::size_t end = block ? text.find("*/", i + 2) : text.find('\n', i + 2);
      if (end == std::string_view::npos) return std::nullopt;  // unterminated: the parser's job
      const std::size_t last = block ? end + 1 : end - 1;      // the loop advances past `last`
      for (; i < last; ++i) advance(text[i]);
      continue;
    }
    if (c == '"') {
      const Position start = pos;
      const std::size_t open = i;
      bool escaped = false;
      for (++i, advance(c); i < text.size(); advance(text[i]), ++i) {
        if (escaped) {
          escaped = false;
        } else if (text[i] == '\\') {
          escaped = true;
        } else if (text[i] == '"') {
          break;
        }
      }
      if (i >= text.size()) return std::nullopt;  // unterminated string: the parser's job
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().keys.push_back({unescape(text, open, i), start});
        stack.back().key = stack.back().keys.back().name;
        stack.back().expect_key = false;
      }
    } else if (c == '{' || c == '[') {
      stack.push_back({c == '{', c == '{', 0, {}, {}});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      if (stack.back().object)
        if (auto error = duplicate_in(stack)) return error;
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().object) {
        stack.back().expect_key = true;
      } else {
        ++stack.back().index;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> json_text_error(std::string_view text, bool comments) {
  if (auto deep = json_depth_error(text, kMaxJsonDepth, comments)) return deep;
  return json_duplicate_key_error(text, comments);
}

}  // namespace attndev::io
