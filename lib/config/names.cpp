#include "config/names.hpp"

#include "config/error.hpp"

namespace attndev::config {

void check_folder_name(const std::string& name, const std::string& path, const std::string& what) {
  const std::string shown =
      name.size() > 40 ? "\"" + name.substr(0, 40) + "...\"" : "\"" + name + "\"";
  if (name.empty() ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos ||
      name[0] == '.')
    throw ConfigError(path, shown +
                                " must be non-empty, not start with '.', and use only letters, "
                                "digits, '.', '_', '-' (it names " +
                                what + ")");
  if (name.size() > kMaxFolderNameLength)
    throw ConfigError(path, shown + " has " + std::to_string(name.size()) +
                                " characters; at most " + std::to_string(kMaxFolderNameLength) +
                                " (it names " + what + ")");
}

}  // namespace attndev::config
