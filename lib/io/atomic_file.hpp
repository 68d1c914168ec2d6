// Whole-file writes that a reader never sees half done.
//
// Result tables are rewritten at the end of a run (and by `report`/`merge`); a crash or SIGKILL in
// the middle must leave either the old file or the new one. We write a temporary file next to the
// target (same filesystem, so rename is atomic), fsync it, then rename over the target.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace attndev::io {

// Throws std::runtime_error naming the path and the OS error.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// As write_file_atomic, but only when `path` does not exist yet: false (and nothing written) when
// it does, even if another process creates it at the same moment (the final step is link(), which
// never replaces a file).
bool write_file_exclusive(const std::filesystem::path& path, std::string_view content);

// Reads a whole file; throws std::runtime_error naming the path when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

}  // namespace attndev::io
