// Names that become folder names: an experiment's default output folder results/<name>, a
// training run's folder, a study's results/train/<name>.
#pragma once

#include <cstddef>
#include <string>

namespace attndev::config {

// Longest name accepted. A folder name may have 255 bytes (NAME_MAX); the limit leaves room for
// what is appended to a name (".tmp" files, "rep12/" prefixes) and keeps paths readable.
inline constexpr std::size_t kMaxFolderNameLength = 128;

// Throws ConfigError(path, ...) unless `name` is non-empty, at most kMaxFolderNameLength bytes of
// letters, digits, '.', '_', '-', and does not start with '.' (no hidden folders, no "..").
// `what` says what the name becomes: "the default output folder results/<name>".
void check_folder_name(const std::string& name, const std::string& path, const std::string& what);

}  // namespace attndev::config
