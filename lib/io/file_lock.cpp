#include "io/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/safe_open.hpp"

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
  int fd = -1;
  try {
    fd = open_regular_file(path, O_RDWR | O_CREAT);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("cannot use the lock file: ") + e.what());
  }
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
  std::string text;
  try {
    text = read_regular_file(path, 4096);
  } catch (const std::runtime_error&) {
    return "an unknown process";
  }
  const std::string line = text.substr(0, text.find('\n'));
  if (line.empty()) return "an unknown process";
  return line;
}

bool exclusively_locked(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
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
