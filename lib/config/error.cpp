#include "config/error.hpp"

namespace attndev::config {

ConfigError::ConfigError(std::string path, std::string message)
    : std::runtime_error(path.empty() ? message : path + ": " + message),
      path_(std::move(path)),
      message_(std::move(message)) {}

}  // namespace attndev::config
