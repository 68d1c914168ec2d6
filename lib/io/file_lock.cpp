#include "io/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attndev::io {

FileLock::~FileLock() {
  release();
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

void FileLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor drops the flock
  fd_ = -1;
}

std::optional<FileLock> FileLock::try_lock(const std::filesystem::path& path, Mode mode) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot create the lock file " + path.string() + ": " +
                             std::strerror(errno));
  const int op = (mode == Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while (::flock(fd, op) != 0) {
    if (errno == EINTR) continue;
    const int saved = errno;
    ::close(fd);
    if (saved == EWOULDBLOCK) return std::nullopt;
    throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(saved));
  }
  return FileLock(fd, path);
}

bool FileLock::convert(Mode mode) {
  if (fd_ < 0) return false;
  const int op = (mode == Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while (::flock(fd_, op) != 0) {
    if (errno == EINTR) continue;
    release();
    return false;
  }
  return true;
}

void FileLock::write_owner(const std::string& what) {
  if (fd_ < 0) return;
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::string text =
      "pid " + std::to_string(::getpid()) + " on host " + host + ": " + what + "\n";
  // Best effort: the lock is what protects; the text only names the holder.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd_, text.data(), text.size(), 0);
  }
}

std::string lock_holder(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line.empty()) return "an unknown process";
  return line;
}

bool exclusively_locked(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int rc;
  do {
    rc = ::flock(fd, LOCK_SH | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  const bool held = rc != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

}  // namespace attndev::io
