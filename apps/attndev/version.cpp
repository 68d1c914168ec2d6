#include "version.hpp"

#include "io/provenance.hpp"

#ifndef ATTNDEV_TARGET_ISA
#error "ATTNDEV_TARGET_ISA is defined for this file by apps/attndev/CMakeLists.txt"
#endif

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
const char* target_isa() {
  return ATTNDEV_TARGET_ISA;
}
std::string version_line() {
  const std::string isa = target_isa();
  return std::string("attndev ") + version_string() + " (git " + git_revision() + ", " +
         compiler_string() + ", " + (isa == "default" ? "default -march" : "-march=" + isa) + ")";
}
}  // namespace attndev::app
