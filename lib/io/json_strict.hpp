// The checks every JSON text attndev reads passes before it is parsed: nesting depth
// (json_depth.hpp) and keys that appear twice in one object.
//
// Why duplicate keys: RFC 8259 leaves them undefined and nlohmann keeps the last, so a config
// with two "variants" lists ran only the second, and `"seq_len": 8, "seq_len": 16` ran 16, without
// a word. A reader that refuses them cannot be fooled by a hand edit or a merge that doubled a
// key; the message names both places so the user can pick the one they meant.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "io/json_depth.hpp"

namespace attndev::io {

// Empty when `text` has no object with a key twice (keys compared after unescaping, so "a" and
// "\u0061" are the same key); otherwise "ambiguous: key ..." naming the key, its JSON path and the
// line and column of both occurrences (it reads after "the JSON is ", as the depth message does).
// Text inside strings (and inside // and /* */ comments when `comments`) is skipped. Syntax errors
// are left to the parser: a malformed text may pass.
std::optional<std::string> json_duplicate_key_error(std::string_view text, bool comments = false);

// json_depth_error, then json_duplicate_key_error: the one pre-parse check of every JSON input
// (configs, -a values, policy objects, run.json, results lines, worker replies, tensor file
// headers, inputs metadata).
std::optional<std::string> json_text_error(std::string_view text, bool comments = false);

}  // namespace attndev::io
