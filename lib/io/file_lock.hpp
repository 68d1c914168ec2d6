// Advisory locks on files (flock) that say who holds them.
//
// A results folder has one writer per results file: two `attndev run`s appending to the same
// JSONL would both redo every point and write every row twice, and a `--force-new` or a `merge`
// rewriting the folder under a running writer deletes rows it has reported as done. The lock is
// taken without waiting: the second writer learns at once who holds it (the holder writes its pid,
// host and command into the lock file) and stops with a message, instead of queueing behind a
// sweep that may run for days. The kernel drops the lock when the holder exits, however it exits
// (a SIGKILL included), so a stale lock file never blocks anyone.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace attndev::io {

class FileLock {
 public:
  enum class Mode { shared, exclusive };

  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Locks `path` (created if missing) in `mode` without waiting. Empty when another process holds
  // a conflicting lock; throws std::runtime_error when the file cannot be created or locked for
  // another reason (a read-only folder, a file system without locks).
  static std::optional<FileLock> try_lock(const std::filesystem::path& path, Mode mode);

  // Records this process (pid, host, command) in the lock file, for holder().
  void write_owner(const std::string& what);

  // Changes the mode of a held lock without waiting; false when another process holds a
  // conflicting one (the lock is then no longer held in any mode).
  bool convert(Mode mode);

  bool held() const { return fd_ >= 0; }
  void release();

 private:
  explicit FileLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// What the holder of `path` wrote ("pid 1234 on host node7: attndev run ..."), or "an unknown
// process" when the file is empty or unreadable.
std::string lock_holder(const std::filesystem::path& path);

// True when some process holds a lock on `path` that excludes a shared one (the file exists and
// a shared lock on it cannot be taken now).
bool exclusively_locked(const std::filesystem::path& path);

}  // namespace attndev::io
