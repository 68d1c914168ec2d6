#include "io/safe_open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

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

// Copies the regular file `path` to a new file beside it and renames it over `path`, so that `path`
// no longer shares its inode with the other hard links (left exactly as they were).
void unshare_inode(const std::filesystem::path& path, mode_t mode) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw std::runtime_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  const int out =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
  if (out < 0) {
    const int saved = errno;
    ::close(fd);
    throw std::runtime_error("cannot create " + tmp.string() + ": " + std::strerror(saved));
  }
  std::vector<char> buffer(std::size_t{1} << 20);
  bool ok = true;
  for (ssize_t n = 0; ok && (n = ::read(fd, buffer.data(), buffer.size())) != 0;) {
    if (n < 0) {
      ok = errno == EINTR;
      continue;
    }
    for (ssize_t done = 0; ok && done < n;) {
      const ssize_t w = ::write(out, buffer.data() + done, static_cast<std::size_t>(n - done));
      ok = w >= 0 || errno == EINTR;
      if (w > 0) done += w;
    }
  }
  ok = ok && ::fsync(out) == 0;
  ok = ::close(out) == 0 && ok;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot give " + path.string() +
                             " a copy of its own (it has other hard links, which must not "
                             "change): " +
                             std::strerror(saved));
  }
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
  if ((flags & O_ACCMODE) != O_RDONLY && st.st_nlink > 1) {
    try {
      if (!(flags & O_TRUNC)) unshare_inode(path, st.st_mode);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    // Truncating: nothing to keep, a fresh file takes the name.
    if (flags & O_TRUNC) ::unlink(path.c_str());
    return open_regular_file(path, flags | O_CREAT, mode);
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

void require_regular_or_absent(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(path, kind_of(st.st_mode));
}

void create_owned_directory(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0) return;
  const int saved = errno;
  struct stat st {};
  if (saved == EEXIST && ::lstat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return;
    throw std::runtime_error(dir.string() + " is " +
                             (S_ISREG(st.st_mode) ? std::string("a file") : kind_of(st.st_mode)) +
                             ", not a folder: attndev writes only into folders it made or "
                             "found as real folders (a link could lead outside the output "
                             "folder); remove it");
  }
  throw std::runtime_error("cannot create the folder " + dir.string() + ": " +
                           std::strerror(saved));
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
