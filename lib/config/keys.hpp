// The one unknown-key rule of every JSON config attndev reads (experiment configs, training runs
// and studies, policy objects), and the JSON-path helpers their error messages use.
//
// Unknown keys are the commonest config bug: a typo silently ignored is a sweep that ran with the
// default. So every object is checked against its schema, and the error names the key, the
// nearest valid key and every valid key. Keys starting with '_' are comments and are accepted
// anywhere (JSON has no comments; docs/configs.md promises this for every config).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/error.hpp"

namespace attndev::config {

// True for "_comment", "_smoke", ...: ignored by every schema.
bool is_comment_key(std::string_view key);

// The message for the first key of `object` that is neither valid nor a comment, e.g.
// "unknown key \"trails\" (did you mean \"trials\"?); valid keys: name, ... (keys starting with _
// are comments)"; empty when every key is fine. `key` receives the offending key. For callers
// that report errors as strings (parse_policy); the others call check_keys.
std::string unknown_key_message(const nlohmann::json& object,
                                std::span<const std::string_view> valid, std::string& key);

// Throws ConfigError(path.key, unknown_key_message) for an unknown key, and ConfigError(path,
// "expected an object ...") when `object` is not an object.
void check_keys(const nlohmann::json& object, std::string_view path,
                std::span<const std::string_view> valid);

// "axes" + "seq_len" -> "axes.seq_len"; "" + "name" -> "name".
std::string join_path(std::string_view prefix, std::string_view key);
// "variants" + 2 -> "variants[2]".
std::string index_path(std::string_view prefix, std::size_t index);

// "an integer", "a string", "an object", ... for "expected X, got Y" messages.
std::string type_name(const nlohmann::json& value);

}  // namespace attndev::config
