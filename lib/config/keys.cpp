#include "config/keys.hpp"

#include <algorithm>

#include "config/suggest.hpp"

namespace attndev::config {

bool is_comment_key(std::string_view key) {
  return !key.empty() && key.front() == '_';
}

std::string unknown_key_message(const nlohmann::json& object,
                                std::span<const std::string_view> valid, std::string& key) {
  if (!object.is_object()) return {};
  for (const auto& [k, value] : object.items()) {
    if (is_comment_key(k)) continue;
    if (std::find(valid.begin(), valid.end(), k) != valid.end()) continue;
    key = k;
    return "unknown key \"" + k + "\"" + did_you_mean(k, valid) +
           "; valid keys: " + join_names(valid) + " (keys starting with _ are comments)";
  }
  return {};
}

void check_keys(const nlohmann::json& object, std::string_view path,
                std::span<const std::string_view> valid) {
  if (!object.is_object())
    throw ConfigError(path.empty() ? "(top level)" : std::string(path),
                      "expected an object {...}, got " + type_name(object));
  std::string key;
  const std::string message = unknown_key_message(object, valid, key);
  if (!message.empty()) throw ConfigError(join_path(path, key), message);
}

std::string join_path(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key);
}

std::string index_path(std::string_view prefix, std::size_t index) {
  return std::string(prefix) + "[" + std::to_string(index) + "]";
}

std::string type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

}  // namespace attndev::config
