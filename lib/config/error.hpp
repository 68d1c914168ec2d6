// ConfigError: a value in a config file (experiment, training, policy) that cannot be used.
//
// Every error names the JSON path of the offending value (`axes.block_c[2]`,
// `variants[1].policy`, `runs[0].attention.block_r`, or `-a seq_len` for a command-line
// override) and says what would fix it, so a typo costs one rerun, not a trip to the docs.
#pragma once

#include <stdexcept>
#include <string>

namespace attndev::config {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string path, std::string message);
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  std::string path_;
  std::string message_;
};

}  // namespace attndev::config
