#pragma once

#include <string>

namespace attndev::app {
const char* version_string();   // "0.1.0"
const char* git_revision();     // short hash at build time, or "unknown"
const char* compiler_string();  // e.g. "GNU 12.2.0"
// What the binary was compiled for (CMake's ATTNDEV_NATIVE, ATTNDEV_PORTABLE_MARCH): "native"
// (-march=native), a portable -march such as "x86-64-v3", or "default" (the compiler's own).
const char* target_isa();
// `attndev --version`: "attndev 0.1.0 (git abc123, GNU 12.2.0, -march=x86-64-v3)". `attndev
// slurm` reads another binary's line to learn its target and whether it is the same build.
std::string version_line();
}  // namespace attndev::app
