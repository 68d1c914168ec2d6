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

// Throws std::runtime_error naming the path and the OS error. A path that names something other
// than a regular file (a device, a pipe: `--csv /dev/stdout`), directly or through a link, is
// written through, not replaced: a rename would put a regular file in its place (as root, even
// over /dev/full).
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// As write_file_atomic, but only when `path` does not exist yet: false (and nothing written) when
// it does, even if another process creates it at the same moment (the final step is link(), which
// never replaces a file).
bool write_file_exclusive(const std::filesystem::path& path, std::string_view content);

// The largest config (or other hand-written JSON input) read: far above any real one, far below
// the memory an endless or mistaken input would take.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{64} << 20;

// True when `path` exists and is (or links to) something other than a regular file or folder.
bool is_special_file(const std::filesystem::path& path);

// Reads a whole file; throws std::runtime_error naming the path when it cannot be opened, when it
// is a device or a folder (a device such as /dev/zero never ends: reading it would take every
// byte of memory), or when it holds more than `max_bytes`.
std::string read_file(const std::filesystem::path& path,
                      std::size_t max_bytes = static_cast<std::size_t>(-1));

}  // namespace attndev::io
