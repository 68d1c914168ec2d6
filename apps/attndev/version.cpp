#include "version.hpp"

#include "io/provenance.hpp"

namespace attndev::app {
// The identity is compiled into lib/io (io::collect_provenance), the one place it is defined.
const char* version_string() {
  return io::tool_version();
}
const char* git_revision() {
  return io::git_revision();
}
const char* compiler_string() {
  return io::compiler_name();
}
}  // namespace attndev::app
