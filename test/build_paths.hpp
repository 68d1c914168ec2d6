// Where this build's source and build trees are, for the tests that read shipped files (configs,
// fixtures, scripts) or run the built binary. The paths are defined in one generated unit
// (build_paths.cpp.in, compiled into attndev_catch_main), not as compile definitions of every
// test unit: a definition holding an absolute path is part of each unit's command line, so a
// compiler cache could serve no test unit to a clone in another folder.
#pragma once

#include <string>

namespace attndev::test {

const std::string& source_dir();  // the source tree's root (PROJECT_SOURCE_DIR)
const std::string& binary_dir();  // the build tree's root (PROJECT_BINARY_DIR)

}  // namespace attndev::test

// Strings, not literals: join with + ("..." + ATTNDEV_SOURCE_DIR + "/configs").
#define ATTNDEV_SOURCE_DIR (::attndev::test::source_dir())
#define ATTNDEV_BINARY_DIR (::attndev::test::binary_dir())
