#include "io/safe_open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "io/atomic_file.hpp"

namespace attndev::io {

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISSOCK(mode)) return "a socket";
  return "a device";
}

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& kind) {
  throw std::runtime_error(path.string() + " is " + kind +
                           ", not a regular file: attndev does not follow links or write "
                           "through special files in an output folder (one planted there could "
                           "make it overwrite a file elsewhere or block forever); remove it");
}

}  // namespace

int open_regular_file(const std::filesystem::path& path, int flags, unsigned mode) {
  // O_NONBLOCK: opening a FIFO for writing with no reader, or for reading, must not wait.
  // O_TRUNC is applied only once the file is known to be regular.
  const int open_flags = (flags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  const int fd = ::open(path.c_str(), open_flags, static_cast<mode_t>(mode));
  if (fd < 0) {
    const int saved = errno;
    if (saved == ELOOP) refuse(path, "a symbolic link");
    if (saved == ENXIO) refuse(path, "a FIFO");
    throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(saved));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t m = st.st_mode;
    ::close(fd);
    refuse(path, kind_of(m));
  }
  if ((flags & O_TRUNC) && ::ftruncate(fd, 0) != 0) {
    const int saved = errno;
    ::close(fd);
    throw std::runtime_error("cannot truncate " + path.string() + ": " + std::strerror(saved));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return {};
  const int fd = open_regular_file(path, O_RDONLY);
  std::string text;
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
    if (static_cast<std::size_t>(n) > max_bytes - text.size()) {
      ::close(fd);
      throw std::runtime_error("cannot read " + path.string() + ": larger than " +
                               std::to_string(max_bytes) + " bytes");
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

void write_regular_file_atomic(const std::filesystem::path& path, std::string_view content) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(path, kind_of(st.st_mode));
  write_file_atomic(path, content);
}

std::size_t remove_stale_temporaries(const std::filesystem::path& dir,
                                     std::initializer_list<std::string_view> names) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0) continue;
    const std::string pid = name.substr(at + 5);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    bool ours = names.size() == 0;
    for (std::string_view n : names) ours = ours || (at == n.size() && name.compare(0, at, n) == 0);
    // Our own pid: a writer of this process may be in the middle of its rename.
    if (!ours || pid == std::to_string(::getpid())) continue;
    if (std::filesystem::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace attndev::io
