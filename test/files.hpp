// Small file helpers shared by the tests (one definition: the tests of an area compile as one
// batch, where file-local copies would collide).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace attndev::test {

// The whole file, bytes as they are; "" when it cannot be opened.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace attndev::test
