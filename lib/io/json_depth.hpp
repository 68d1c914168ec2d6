// A bound on how deeply JSON input may nest, checked on the text before it is parsed.
//
// Why: nlohmann's parser itself is iterative, but serializing (dump), comparing and our own walkers
// recurse once per level, so a config of 100,000 nested brackets (`"_x": [[[[...`) parses and then
// overflows the stack. Every JSON input attndev reads (configs, -a values, --policy objects,
// run.json, results lines, safetensors headers) passes this check first; nothing attndev writes
// nests deeper than a handful of levels.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attndev::io {

inline constexpr std::size_t kMaxJsonDepth = 64;

// Empty when `text` nests arrays and objects at most `limit` deep (brackets inside strings, and
// inside // and /* */ comments when `comments`, do not count); otherwise a message naming the
// limit and the line and column where it is exceeded. Syntax errors are left to the parser.
std::optional<std::string> json_depth_error(std::string_view text,
                                            std::size_t limit = kMaxJsonDepth,
                                            bool comments = false);

}  // namespace attndev::io
