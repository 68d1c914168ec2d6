// Running the attndev binary from a test: argv without a shell, stdout/stderr to files, exit code
// or terminating signal, and a running child that a test can signal or race against another.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "files.hpp"
#include "build_paths.hpp"

extern char** environ;

namespace attndev::test {

namespace fs = std::filesystem;

// A fresh folder per test process (every ctest entry is one process) under the system temp dir.
inline const fs::path& work_dir() {
  static const fs::path d = [] {
    const fs::path p = fs::temp_directory_path() / ("attndev_cli_" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

struct Child {
  pid_t pid = -1;
  fs::path out, err;
};

struct Result {
  int code = -1;  // exit status, -1 when killed by a signal
  int signal = 0;
  std::string out, err;
};

// Starts attndev with argv and extra environment entries (SLURM_* of this process dropped);
// stdout to `stdout_path` unless empty (then a fresh file in `dir`).
inline Child spawn_attndev(const fs::path& dir, const std::vector<std::string>& args,
                           const std::vector<std::string>& env_extra = {},
                           const std::string& stdout_path = "") {
  static int counter = 0;
  Child c;
  ++counter;
  c.out = stdout_path.empty() ? dir / ("out." + std::to_string(counter)) : fs::path(stdout_path);
  c.err = dir / ("err." + std::to_string(counter));
  const std::string binary = ATTNDEV_BINARY_DIR + "/apps/attndev/attndev";
  REQUIRE(fs::exists(binary));
  std::vector<std::string> argv_s = {binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("SLURM_", 0) != 0) env_s.push_back(entry);
  }
  env_s.insert(env_s.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&c.pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return c;
}

inline Result wait_for(const Child& c) {
  int status = 0;
  REQUIRE(waitpid(c.pid, &status, 0) == c.pid);
  Result r;
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = slurp(c.out);
  r.err = slurp(c.err);
  return r;
}

// attndev started in work_dir(); see spawn_attndev.
inline Child spawn_cli(const std::vector<std::string>& args,
                       const std::vector<std::string>& env_extra = {}) {
  return spawn_attndev(work_dir(), args, env_extra);
}

// attndev run to its end in work_dir().
inline Result run_cli(const std::vector<std::string>& args,
                      const std::vector<std::string>& env_extra = {}) {
  return wait_for(spawn_attndev(work_dir(), args, env_extra));
}

// `text` written to work_dir()/<name>.json; its path.
inline fs::path write_config(const std::string& name, const std::string& text) {
  const fs::path p = work_dir() / (name + ".json");
  write_text(p, text);
  return p;
}

// Polls `ready` every millisecond for up to `seconds`; true when it held.
inline bool wait_until(const std::function<bool()>& ready, double seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ready();
}

// Rows ("record":"row" lines) in a results JSONL file.
inline std::size_t count_rows(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) n += line.find("\"record\":\"row\"") != std::string::npos;
  return n;
}

}  // namespace attndev::test
