// source_tree() alone in its unit: the one compiled with the source tree's path
// (ATTNDEV_SOURCE_DIR, apps/attndev/CMakeLists.txt), so that every other unit of the app is the
// same text and command line in every clone and a compiler cache serves it.
#include "figure_script.hpp"

namespace attndev::app {

const char* source_tree() {
  return ATTNDEV_SOURCE_DIR;
}

}  // namespace attndev::app
