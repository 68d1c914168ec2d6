// Opening files inside an output folder, where anyone who can write the folder could have
// planted a link or a FIFO under a name attndev writes (results.jsonl, run.json, a lock file).
//
// Every such file is opened without following a symbolic link (O_NOFOLLOW: a link to a file
// elsewhere would make attndev truncate or append to that file) and checked to be a regular file
// before its first byte moves: a FIFO is opened non-blocking, so it is refused instead of
// blocking the command forever, and a device is never written.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace attndev::io {

// open(2) of `path` with `flags` | O_NOFOLLOW | O_CLOEXEC; returns a descriptor of a regular
// file (blocking mode). Throws std::runtime_error naming the path and what is wrong: a link, a
// FIFO, a device, a folder, or the OS error. Opened for writing, a file with more than one hard
// link is first given an inode of its own (its bytes copied to a new file renamed over the name):
// appending to results.jsonl after `cp -al out/x out/x-bak` must not grow the backup too.
int open_regular_file(const std::filesystem::path& path, int flags, unsigned mode = 0644);

// A whole regular file read through open_regular_file; empty when `path` does not exist.
// `max_bytes` as io::read_file.
std::string read_regular_file(const std::filesystem::path& path,
                              std::size_t max_bytes = static_cast<std::size_t>(-1));

// write_file_atomic for a file in an output folder: refuses (std::runtime_error) when `path`
// exists as anything but a regular file, instead of writing through it; the temporary file is
// created exclusively and never followed.
void write_regular_file_atomic(const std::filesystem::path& path, std::string_view content);

// Refuses (std::runtime_error, as open_regular_file) when `path` exists as anything but a regular
// file: a name attndev chooses inside a folder (a dump file, a table) is replaced by a rename,
// never written through a symbolic link, a FIFO (which would block) or a device.
void require_regular_or_absent(const std::filesystem::path& path);

// Creates the folder `dir` unless it exists as a real folder (its parent must exist); refuses a
// symbolic link, a file or anything else in its place, so that nothing written below it lands
// outside the output folder.
void create_owned_directory(const std::filesystem::path& dir);

// Removes temporary files (`<name>.tmp.<pid>`) that killed writers left in `dir`: those of the
// names in `names`, or of every name when `names` is empty (the caller then holds the folder
// exclusively). Returns how many were removed.
std::size_t remove_stale_temporaries(const std::filesystem::path& dir,
                                     std::initializer_list<std::string_view> names = {});

}  // namespace attndev::io
