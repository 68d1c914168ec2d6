#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attndev::io {

namespace {

[[noreturn]] void throw_os_error(const std::string& what, const std::filesystem::path& path) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

namespace {

// Writes and flushes `content` to a temporary file next to `path`; returns its name.
std::filesystem::path write_temporary(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  // Created exclusively and never followed: a link planted under this name must not make us
  // write elsewhere. A file of that name is ours from an earlier call or a dead writer with our
  // pid; removing it first is safe.
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw_os_error("cannot create", tmp);
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;  // a signal (SIGINT) must not leave a short file
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      throw_os_error("cannot write", tmp);
    }
    written += static_cast<std::size_t>(n);
  }
  // Without fsync a power loss after rename can leave an empty file under the final name.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    throw_os_error("cannot flush", tmp);
  }
  return tmp;
}

}  // namespace

bool is_special_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

namespace {

void write_through(const std::filesystem::path& path, std::string_view content) {
  // O_NONBLOCK: a FIFO nobody reads (one planted under an output name) fails with ENXIO instead
  // of blocking the command forever; a pipe with a reader (`--csv /dev/stdout | ...`) opens.
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENXIO)
    throw std::runtime_error("cannot write " + path.string() +
                             ": a FIFO that no process reads (writing would block forever); "
                             "remove it or start its reader first");
  if (fd < 0) throw_os_error("cannot open", path);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      errno = saved;
      throw_os_error("cannot write", path);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw_os_error("cannot write", path);
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  if (is_special_file(path)) return write_through(path, content);
  const std::filesystem::path tmp = write_temporary(path, content);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    throw_os_error("cannot rename into", path);
  }
}

bool write_file_exclusive(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = write_temporary(path, content);
  const int rc = ::link(tmp.c_str(), path.c_str());
  const int saved = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) return true;
  if (saved == EEXIST) return false;
  errno = saved;
  throw_os_error("cannot create", path);
}

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw std::runtime_error("cannot read " + path.string() + ": " +
                             (S_ISDIR(st.st_mode) ? "a folder" : "a device") +
                             ", not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    if (static_cast<std::size_t>(in.gcount()) > max_bytes - text.size())
      throw std::runtime_error("cannot read " + path.string() + ": larger than " +
                               std::to_string(max_bytes) + " bytes");
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error("cannot read " + path.string() + ": read error");
  return text;
}

}  // namespace attndev::io
