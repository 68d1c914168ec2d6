#pragma once

namespace attndev::app {
const char* version_string();   // "0.1.0"
const char* git_revision();     // short hash at build time, or "unknown"
const char* compiler_string();  // e.g. "GNU 12.2.0"
}  // namespace attndev::app
