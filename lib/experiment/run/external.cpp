#include "experiment/run/external.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "experiment/run/tensor_io.hpp"
#include "measure/measure.hpp"

extern char** environ;

namespace attndev::experiment {

void BoundedTail::append(std::string_view bytes) {
  buffer_.append(bytes);
  // Trimmed in batches: erasing the front on every small read would be quadratic.
  if (buffer_.size() > 2 * capacity_) {
    const std::size_t cut = buffer_.size() - capacity_;
    buffer_.erase(0, cut);
    dropped_ += cut;
  }
}

std::string BoundedTail::text() const {
  if (buffer_.size() <= capacity_) return buffer_;
  return buffer_.substr(buffer_.size() - capacity_);
}

namespace {

// `text` cut into printable pieces: a plain character, a valid UTF-8 sequence, or an escape.
std::vector<std::string> escaped_pieces(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto hex = [](unsigned char c) { return std::string("\\x") + kHex[c >> 4] + kHex[c & 15]; };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back((c < 0x20 || c == 0x7f) ? hex(c) : std::string(1, static_cast<char>(c)));
      ++i;
      continue;
    }
    // A UTF-8 sequence is kept when it is valid and not a C1 control (U+0080..U+009F, which
    // some terminals obey like ESC); anything else is escaped byte by byte.
    const std::size_t length = c >= 0xf0 && c < 0xf5   ? 4
                               : c >= 0xe0 && c < 0xf0 ? 3
                               : c >= 0xc2 && c < 0xe0 ? 2
                                                       : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (valid && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) valid = false;
    if (!valid) {
      out.push_back(hex(c));
      ++i;
      continue;
    }
    out.emplace_back(text.substr(i, length));
    i += length;
  }
  return out;
}

}  // namespace

std::string escape_control(std::string_view text) {
  std::string out;
  for (const std::string& piece : escaped_pieces(text)) out += piece;
  return out;
}

namespace {

// The last lines a failing command printed, on one line, short enough for a CSV cell, with
// control characters escaped.
std::string tail_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : text.size() > 4096 ? std::string_view(text).substr(text.size() - 4096)
                                   : std::string_view(text)) {
    if (c == '\n') {
      if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  std::string raw;
  const std::size_t first = lines.size() > 3 ? lines.size() - 3 : 0;
  for (std::size_t i = first; i < lines.size(); ++i) raw += (raw.empty() ? "" : " | ") + lines[i];
  // Cut whole pieces from the front: never inside an escape or a UTF-8 sequence.
  constexpr std::size_t kMax = 400;
  const std::vector<std::string> pieces = escaped_pieces(raw);
  std::size_t size = 0, from = pieces.size();
  while (from > 0 && size + pieces[from - 1].size() <= kMax) size += pieces[--from].size();
  std::string out = from > 0 ? "..." : "";
  for (std::size_t i = from; i < pieces.size(); ++i) out += pieces[i];
  return out;
}

// `empty_note`: say so when stderr is empty (a crash or a hang that printed nothing).
std::string with_tail(std::string message, const std::string& stderr_tail, bool empty_note = true) {
  const std::string tail = tail_of(stderr_tail);
  if (tail.empty()) return empty_note ? message + " (stderr empty)" : message;
  return message + ": " + tail;
}

std::string signal_text(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
}

// (parent pid, process group) of `pid` from /proc, or nullopt when it is gone.
std::optional<std::pair<pid_t, pid_t>> parent_and_group(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  char state = 0;
  long ppid = 0, pgrp = 0;
  if (std::sscanf(text.c_str() + close + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
    return std::nullopt;
  return std::pair<pid_t, pid_t>{static_cast<pid_t>(ppid), static_cast<pid_t>(pgrp)};
}

// Process groups of live external workers (external_worker.cpp): children of attndev in their
// own group like a per-point command's orphans, but alive on purpose between points.
std::mutex kept_groups_mutex;
std::set<pid_t> kept_groups;

bool is_kept_group(pid_t group) {
  const std::lock_guard<std::mutex> lock(kept_groups_mutex);
  return kept_groups.count(group) != 0;
}

// Children of this process outside its own process group: orphans of an external command
// reparented here (attndev is their subreaper), never a child attndev started in its own group
// and never a live worker's group.
std::vector<pid_t> adopted_children() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid(), own_group = ::getpgrp();
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (const dirent* entry = ::readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(entry->d_name));
    const auto pg = parent_and_group(pid);
    if (pg && pg->first == self && pg->second != own_group && !is_kept_group(pg->second))
      out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

void drain(int& fd, BoundedTail& tail) {
  char buffer[1 << 14];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      tail.append(std::string_view(buffer, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      ::close(fd);
      fd = -1;
    }
    return;
  }
}

// The environment of the child: attndev's, minus the names `extra` sets, plus `extra`.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry = *e;
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& x : extra)
      replaced = replaced || std::string_view(x).substr(0, x.find('=')) == name;
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

pid_t fork_kept_group() {
  // Held across the fork: an orphan scan on another thread that reads the child's group from
  // /proc then asks is_kept_group waits here until the child is registered.
  const std::lock_guard<std::mutex> lock(kept_groups_mutex);
  const pid_t pid = ::fork();
  if (pid > 0) kept_groups.insert(pid);
  return pid;
}

void release_kept_group(pid_t group) {
  const std::lock_guard<std::mutex> lock(kept_groups_mutex);
  kept_groups.erase(group);
}

void end_process_tree(pid_t group) {
  if (group > 0) ::kill(-group, SIGKILL);
  // Each pass kills what was orphaned to us by the previous one (a setsid child's own
  // children are reparented here only once it dies); a tree is never deeper than this bound
  // in practice, and the bound keeps a fork bomb from holding attndev forever.
  for (int pass = 0; pass < 64; ++pass) {
    const std::vector<pid_t> orphans = adopted_children();
    if (orphans.empty()) break;
    for (pid_t pid : orphans) {
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  // Zombies of the group that were not our children are reaped by their own parents (dead now).
  if (group > 0)
    while (::waitpid(-group, nullptr, WNOHANG) > 0) {
    }
}

namespace {

// The guardian's signal from the kernel when attndev (the thread that forked it) dies.
constexpr int kParentGoneSignal = SIGUSR1;

// Every descriptor of the guardian closed: copies of attndev's ends of a worker's socket and
// pipes would keep the command from ever seeing end of file.
void close_every_descriptor() {
  if (::syscall(SYS_close_range, 0U, ~0U, 0U) == 0) return;
  struct rlimit limit {};
  const rlim_t top = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                         ? limit.rlim_cur
                         : 65536;
  for (rlim_t fd = 0; fd < top; ++fd) ::close(static_cast<int>(fd));
}

// Ends the guardian as the command ended: the same exit status, or the same signal (no core
// file: the command's crash is not the guardian's).
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const struct rlimit no_core {};
    ::setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    sigset_t only;
    ::sigemptyset(&only);
    ::sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);  // a signal whose default is to be ignored
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

}  // namespace

void exec_guarded_shell(const char* command, char* const* envp, pid_t parent) {
  sigset_t waited, before;
  ::sigemptyset(&waited);
  ::sigaddset(&waited, SIGCHLD);
  ::sigaddset(&waited, kParentGoneSignal);
  ::sigprocmask(SIG_BLOCK, &waited, &before);
  ::prctl(PR_SET_PDEATHSIG, kParentGoneSignal);
  if (::getppid() != parent) ::_exit(126);  // attndev died before the prctl
  const pid_t shell = ::fork();
  if (shell < 0) ::_exit(126);
  if (shell == 0) {
    ::sigprocmask(SIG_SETMASK, &before, nullptr);  // the command gets attndev's mask, as before
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(command),
                    nullptr};
    ::execve("/bin/sh", argv, envp);
    ::_exit(127);
  }
  close_every_descriptor();
  // After the fork: an ignored disposition would be inherited across the command's exec.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::sigaction(sig, &ignore, nullptr);
  for (;;) {
    // sigwaitinfo is the rt_sigtimedwait system call itself: safe here like the calls above.
    const int sig = ::sigwaitinfo(&waited, nullptr);
    if (sig == kParentGoneSignal && ::getppid() != parent) ::kill(0, SIGKILL);  // the group, us too
    if (sig != SIGCHLD) continue;  // EINTR, or the signal sent by someone else
    int status = 0;
    pid_t done;
    while ((done = ::waitpid(-1, &status, WNOHANG)) > 0)
      if (done == shell) exit_like(status);
  }
}

ProcessExit run_shell_command(const std::string& command,
                              const std::vector<std::string>& environment, double timeout_s,
                              const std::function<bool()>& stop_requested) {
  ProcessExit result;
  // Orphans of the command (background jobs, setsid daemons) become our children, so
  // end_process_tree can find and end them.
  static const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)subreaper;
  std::vector<std::string> env_s = child_environment(environment);
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.kind = ProcessExit::Kind::spawn_failed;
    result.error = std::string("pipe failed: ") + std::strerror(errno);
    return result;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.kind = ProcessExit::Kind::spawn_failed;
    result.error = std::string("pipe failed: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.kind = ProcessExit::Kind::spawn_failed;
    result.error = std::string("fork failed: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return result;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls (the parent may have threads).
    ::setpgid(0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    if (in < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    exec_guarded_shell(command.c_str(), envp.data(), parent);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with a kill before the child's setpgid
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  ::fcntl(out_fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_fd, F_SETFL, O_NONBLOCK);
  BoundedTail out_tail, err_tail;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  bool exited = false;
  for (;;) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    ::poll(fds, 2, 20);
    if (out_fd >= 0) drain(out_fd, out_tail);
    if (err_fd >= 0) drain(err_fd, err_tail);
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      exited = true;
      break;
    }
    if (done < 0 && errno != EINTR) {
      result.kind = ProcessExit::Kind::spawn_failed;
      result.error = std::string("waitpid failed: ") + std::strerror(errno);
      break;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool stop = stop_requested && stop_requested();
    if (elapsed > timeout_s || stop) {
      // A grace period for the group to flush and exit, then the whole tree.
      ::kill(-pid, SIGTERM);
      for (int i = 0; i < 100 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) {
        if (out_fd >= 0) drain(out_fd, out_tail);
        if (err_fd >= 0) drain(err_fd, err_tail);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.kind = stop ? ProcessExit::Kind::stopped : ProcessExit::Kind::timed_out;
      break;
    }
  }
  // Normal exit included: background children must not run on, write into the next point's
  // files or keep the pipes open.
  end_process_tree(pid);
  for (int i = 0; i < 50 && (out_fd >= 0 || err_fd >= 0); ++i) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    ::poll(fds, 2, 20);
    if (out_fd >= 0) drain(out_fd, out_tail);
    if (err_fd >= 0) drain(err_fd, err_tail);
  }
  // A descriptor still open here was passed to a process outside the tree; stop reading it.
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  result.stdout_tail = out_tail.text();
  result.stderr_tail = err_tail.text();
  if (exited) {
    if (WIFSIGNALED(status)) {
      result.kind = ProcessExit::Kind::signaled;
      result.code = WTERMSIG(status);
    } else {
      result.code = WEXITSTATUS(status);
    }
  }
  return result;
}

std::vector<std::string> external_environment(numerics::Format format,
                                              const ExternalContext& context) {
  std::vector<std::string> env = {
      placeholder_variable("inputs") + "=" + context.inputs_file.string(),
      placeholder_variable("output") + "=" + (context.work_dir / "output.safetensors").string(),
      placeholder_variable("format") + "=" + std::string(numerics::format_name(format))};
  if (context.axes.is_object())
    for (const auto& [name, v] : context.axes.items())
      env.push_back(placeholder_variable(name) + "=" +
                    (v.is_string() ? v.get<std::string>() : v.dump()));
  return env;
}

std::string expand_command(const std::string& command, numerics::Format /*format*/,
                           const ExternalContext& context) {
  if (const auto problem = external_template_problem(command))
    throw std::invalid_argument("external command \"" + command + "\": " + *problem);
  std::string out;
  for (std::size_t i = 0; i < command.size();) {
    if (command[i] == '\\' && i + 1 < command.size()) {
      out += command.substr(i, 2);
      i += 2;
      continue;
    }
    if (command[i] != '{' || (i > 0 && command[i - 1] == '$')) {
      out += command[i++];
      continue;
    }
    const std::size_t close = command.find('}', i);
    const std::string name = command.substr(i + 1, close - i - 1);
    const bool known = name == "inputs" || name == "output" || name == "format" ||
                       (context.axes.is_object() && context.axes.contains(name));
    // Double quotes around the expansion: one word, no globbing, and never parsed as code.
    out += known ? "\"${" + placeholder_variable(name) + "}\"" : std::string("''");
    i = close + 1;
  }
  return out;
}

ExternalResult run_external(const Variant::External& external, numerics::Format format,
                            const ExternalContext& context, const attention::Shape& expected) {
  ExternalResult r;
  const std::filesystem::path output = context.work_dir / "output.safetensors";
  std::error_code ec;
  // Every form read_output_file accepts: a file left by an earlier point's call must never be
  // read as this call's output.
  std::filesystem::remove(output, ec);
  std::filesystem::remove(output.string() + ".npy", ec);
  std::string command;
  try {
    command = expand_command(external.command, format, context);
  } catch (const std::invalid_argument& e) {
    r.status = Status::failed(e.what());
    return r;
  }
  const ProcessExit exit = run_shell_command(command, external_environment(format, context),
                                             external.timeout_s, context.stop_requested);
  const std::string& err_log = exit.stderr_tail;
  using Exit = ProcessExit;
  switch (exit.kind) {
    case Exit::Kind::spawn_failed:
      r.status = Status::failed("external command could not run: " + exit.error);
      return r;
    case Exit::Kind::stopped:
      r.status = Status::failed("external command stopped (attndev was interrupted)");
      return r;
    case Exit::Kind::timed_out:
      r.status = Status::failed(with_tail(
          "external command timed out after " + seconds_text(external.timeout_s) + " s (killed)",
          err_log));
      return r;
    case Exit::Kind::signaled:
      r.status = Status::failed(
          with_tail("external command killed by " + signal_text(exit.code), err_log));
      return r;
    case Exit::Kind::exited:
      break;
  }
  if (exit.code > 128 && exit.code < 128 + 65) {
    // /bin/sh reports a child killed by signal N as status 128 + N (it does not die itself).
    r.status =
        Status::failed(with_tail("external command killed by " + signal_text(exit.code - 128) +
                                     " (shell status " + std::to_string(exit.code) + ")",
                                 err_log));
    return r;
  }
  if (exit.code == kExternalSkipStatus) {
    // "Cannot run here" (no GPU for a CUDA backend, a dtype the kernel lacks): nothing compared.
    const std::string tail = tail_of(err_log);
    r.status =
        Status::skipped("external command: " +
                        (tail.empty() ? std::string("exit status 77, no reason given") : tail));
    return r;
  }
  if (exit.code != 0) {
    const std::string why = exit.code == 127   ? " (command not found?)"
                            : exit.code == 126 ? " (not executable?)"
                                               : "";
    r.status = Status::failed(with_tail(
        "external command exited with status " + std::to_string(exit.code) + why, err_log));
    return r;
  }
  return read_external_output(output, expected, "external command exited 0", err_log);
}

ExternalResult read_external_output(const std::filesystem::path& output,
                                    const attention::Shape& expected, const std::string& done,
                                    const std::string& log) {
  ExternalResult r;
  std::error_code ec;
  if (!std::filesystem::exists(output, ec) &&
      !std::filesystem::exists(output.string() + ".npy", ec)) {
    r.status = Status::failed(with_tail(done + " but wrote no {output} file", log, false));
    return r;
  }
  try {
    r.output.o = read_output_file(output, expected);
  } catch (const std::exception& e) {
    // Name the file by its placeholder: the path is a temporary folder, gone after the point.
    std::string what = e.what();
    const std::string path = output.string();
    for (std::size_t at = what.find(path); at != std::string::npos; at = what.find(path))
      what.replace(at, path.size(), "{output}");
    r.status = Status::failed(with_tail("external " + what, log, false));
    return r;
  }
  if (const measure::NonFinite bad = measure::count_non_finite(r.output.o.data); bad.any())
    r.status = Status::failed("external output holds " + bad.text());
  return r;
}

}  // namespace attndev::experiment
