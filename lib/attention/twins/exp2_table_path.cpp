// find_exp2_table, alone in its unit: the one compiled with the source tree's path
// (ATTNDEV_DATA_DIR, lib/attention/CMakeLists.txt). An absolute path on a unit's command line
// keeps a compiler cache from serving it to a clone in another folder; in exp2_table.cpp it made
// that unit recompile in every clone (13 s in the sanitizer build), here it is a unit of lines.
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "attention/twins/exp2_table.hpp"

namespace attndev::attention::twins {

std::string find_exp2_table() {
  if (const char* env = std::getenv("ATTNDEV_EXP2_TABLE"); env && *env) return env;
#ifdef ATTNDEV_DATA_DIR
  const std::string path = std::string(ATTNDEV_DATA_DIR) + "/exp2/" + kExp2TableFileName;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return path;
#endif
  return "";
}

}  // namespace attndev::attention::twins
