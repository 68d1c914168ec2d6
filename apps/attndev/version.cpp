#include "version.hpp"

namespace attndev::app {
const char* version_string() {
  return ATTNDEV_VERSION;
}
const char* git_revision() {
  return ATTNDEV_GIT_REV;
}
const char* compiler_string() {
  return ATTNDEV_COMPILER;
}
}  // namespace attndev::app
