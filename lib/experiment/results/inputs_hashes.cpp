// Content hashes of the inputs files a config reads (results_store.hpp): recorded in every run
// record, so that rows measured on other contents of a file are never mixed with these.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "experiment/results/results_store.hpp"
#include "experiment/spec/stable_hash.hpp"
#include "io/safe_open.hpp"

namespace attndev::experiment {

namespace fs = std::filesystem;
using io::Json;

std::string file_content_hash(const fs::path& path) {
  const int fd = io::open_regular_file(path, O_RDONLY);
  std::uint64_t h = kFnv1a64Offset;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      throw std::runtime_error("cannot read " + path.string() + ": " + std::strerror(saved));
    }
    if (n == 0) break;
    h = fnv1a64(std::string_view(buffer, static_cast<std::size_t>(n)), h);
  }
  ::close(fd);
  return hex16(splitmix64_finalize(h));
}

Json inputs_content_hashes(const Config& config) {
  Json out = Json::object();
  for (const AxisValue& value : config.axis("inputs").values)
    if (const auto* file = std::get_if<InputsFile>(&value); file && !file->path.empty())
      out[file->path] = file_content_hash(file->path);
  return out;
}

}  // namespace attndev::experiment
