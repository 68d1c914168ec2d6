#include "experiment/run/external_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/run/tensor_io.hpp"
#include "io/json_strict.hpp"

extern char** environ;

namespace attndev::experiment {

// Named rather than anonymous: the unity build puts this file in one translation unit with
// external.cpp, whose anonymous namespace has helpers of the same names.
namespace worker_detail {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The fd on which a worker answers: the first after stdin/stdout/stderr.
constexpr int kAnswerFd = 3;
// What is kept of a worker's log, and what a row quotes of it.
constexpr std::size_t kLogKeep = 16 * 1024;
constexpr std::size_t kQuoteMax = 400;
// An answer line longer than this is garbage (a worker that prints an array to fd 3), not an
// allocation without bound.
constexpr std::size_t kAnswerMax = 64 * 1024;

// Bytes as one printable line: a control or non-ASCII byte becomes \xNN, so a worker's log can
// neither break a CSV cell nor smuggle terminal escapes into a summary.
std::string escaped(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The last lines of a log text, escaped, on one line: " | " between lines, at most kQuoteMax.
std::string quote_tail(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(begin, end - begin);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back(line);
    begin = end + 1;
  }
  std::string out;
  const std::size_t first = lines.size() > 3 ? lines.size() - 3 : 0;
  for (std::size_t i = first; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + escaped(lines[i]);
  if (out.size() > kQuoteMax) out = "..." + out.substr(out.size() - kQuoteMax);
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string signal_text(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
}

// "exited with status 3" / "killed by signal 6 (SIGABRT)"; /bin/sh reports a child killed by
// signal N as its own status 128 + N.
std::string exit_text(int status) {
  if (WIFSIGNALED(status)) return "killed by " + signal_text(WTERMSIG(status));
  const int code = WEXITSTATUS(status);
  if (code > 128 && code < 128 + 65)
    return "killed by " + signal_text(code - 128) + " (shell status " + std::to_string(code) + ")";
  return "exited with status " + std::to_string(code) +
         (code == 127   ? " (command not found?)"
          : code == 126 ? " (not executable?)"
                        : "");
}

// One worker process: its group, the request socket, the answer and log pipes.
class Worker {
 public:
  enum class Got { line, exited, timed_out, stopped, garbage };

  Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { end(/*grace_s=*/0); }

  // Starts the command; an empty string on success, else why not (the worker is then ended).
  std::string start(const std::string& command, double timeout_s,
                    const std::function<bool()>& stop) {
    if (std::string error = spawn(command); !error.empty())
      return "external worker could not start: " + error;
    std::string line;
    const Got got = wait_line(timeout_s, stop, line);
    if (got == Got::line && !io::json_text_error(line)) {
      const json ready = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (ready.is_object() && ready.contains("ready") && ready["ready"].is_boolean() &&
          ready["ready"].get<bool>())
        return {};
    }
    std::string why = failure_text(got, timeout_s, line, "at start", R"({"ready": true})");
    end(/*grace_s=*/0);
    return why;
  }

  // Sends one request and waits for its answer line; `line` holds it (or the garbage).
  Got ask(const json& request, double timeout_s, const std::function<bool()>& stop,
          std::string& line) {
    log_mark_ = log_total_;
    const std::string text = request.dump() + "\n";
    for (std::size_t sent = 0; sent < text.size();) {
      const ssize_t n = ::send(requests_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return reap_now();  // EPIPE: it died between points
      sent += static_cast<std::size_t>(n);
    }
    return wait_line(timeout_s, stop, line);
  }

  // The row's text for everything but an answer: what happened, then the log since the request.
  std::string failure_text(Got got, double timeout_s, const std::string& line,
                           const std::string& when, const std::string& expected) const {
    const std::string tail = quote_tail(log_since_mark());
    const std::string with_tail = tail.empty() ? " (worker log empty)" : ": " + tail;
    switch (got) {
      case Got::exited:
        return "external worker " + exit_text(status_) + " " + when + with_tail;
      case Got::timed_out:
        return "external worker timed out after " + seconds_text(timeout_s) + " s " + when +
               " (killed)" + with_tail;
      case Got::stopped:
        return "external worker stopped (attndev was interrupted)";
      case Got::garbage:
      case Got::line:
        break;
    }
    std::string shown = escaped(line.substr(0, 200)) + (line.size() > 200 ? "..." : "");
    return "external worker answered garbage " + when + " (expected " + expected + "): " + shown;
  }

  // Closes its stdin (a polite worker exits on end of file), waits `grace_s`, then SIGTERM and
  // SIGKILL to the whole group; reaps it. Safe to call twice.
  void end(double grace_s) {
    if (requests_ >= 0) ::close(requests_);
    requests_ = -1;
    if (pid_ > 0) {
      if (!wait_exit(grace_s)) {
        ::kill(-pid_, SIGTERM);
        if (!wait_exit(1.0)) ::kill(-pid_, SIGKILL);
      }
      // Children the shell left in the group die too, while the reaped-not-yet leader keeps the
      // group id from being reused.
      ::kill(-pid_, SIGKILL);
      while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
      }
      release_kept_group(pid_);
      pid_ = -1;
    }
    for (int* fd : {&answers_, &log_}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }

  // Started and not exited: a worker that died between points (out of memory, killed by hand)
  // is replaced before the next request rather than failing a point it never saw.
  bool running() {
    if (pid_ > 0 && wait_exit(0)) end(/*grace_s=*/0);
    return pid_ > 0;
  }
  // The exit of a worker that ended by itself with exit(77): "cannot run here", as a per-point
  // command's status 77 (PyTorch absent, no GPU).
  bool said_skip() const {
    return WIFEXITED(status_) && WEXITSTATUS(status_) == kExternalSkipStatus;
  }
  std::uint64_t next_id() { return ++last_id_; }

 private:
  std::string spawn(const std::string& command) {
    int sock[2], answer[2], log[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) != 0)
      return std::string("socketpair: ") + std::strerror(errno);
    if (::pipe2(answer, O_CLOEXEC) != 0) {
      const std::string e = std::string("pipe: ") + std::strerror(errno);
      ::close(sock[0]);
      ::close(sock[1]);
      return e;
    }
    if (::pipe2(log, O_CLOEXEC) != 0) {
      const std::string e = std::string("pipe: ") + std::strerror(errno);
      for (int fd : {sock[0], sock[1], answer[0], answer[1]}) ::close(fd);
      return e;
    }
    // The environment is built before fork: the child may call only async-signal-safe functions.
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e)
      if (std::string_view(*e).rfind("ATTNDEV_WORKER_FD=", 0) != 0) env_text.emplace_back(*e);
    env_text.push_back("ATTNDEV_WORKER_FD=" + std::to_string(kAnswerFd));
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = fork_kept_group();
    if (pid < 0) {
      const std::string e = std::string("fork: ") + std::strerror(errno);
      for (int fd : {sock[0], sock[1], answer[0], answer[1], log[0], log[1]}) ::close(fd);
      return e;
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      // Out of the way of 0..3 first, so that no dup2 below overwrites a descriptor still needed.
      const int in = ::fcntl(sock[1], F_DUPFD_CLOEXEC, 10);
      const int ans = ::fcntl(answer[1], F_DUPFD_CLOEXEC, 10);
      const int out = ::fcntl(log[1], F_DUPFD_CLOEXEC, 10);
      if (in < 0 || ans < 0 || out < 0) ::_exit(126);
      // dup2 clears close-on-exec on the copies: exactly 0..3 reach the worker.
      if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0 ||
          ::dup2(ans, kAnswerFd) < 0)
        ::_exit(126);
      // attndev SIGKILLed: the worker's top process dies with it (and attndev.worker exits on the
      // socket's hang-up anyway). Not exec_guarded_shell: its guardian is a fork of attndev that
      // would live as long as the worker, pinning every page attndev held at the fork (a worker
      // restarted mid-run, after gigabytes of tensors) until the run ends.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
      const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
      ::execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // from the parent too: no race with a kill before the child's setpgid
    ::close(sock[1]);
    ::close(answer[1]);
    ::close(log[1]);
    pid_ = pid;
    requests_ = sock[0];
    answers_ = answer[0];
    log_ = log[0];
    ::fcntl(answers_, F_SETFL, O_NONBLOCK);
    ::fcntl(log_, F_SETFL, O_NONBLOCK);
    log_text_.clear();
    log_total_ = log_mark_ = 0;
    answer_buffer_.clear();
    return {};
  }

  // Waits for one answer line, keeping the log drained (a worker blocked on a full log pipe
  // would look hung).
  Got wait_line(double timeout_s, const std::function<bool()>& stop, std::string& line) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
    for (;;) {
      if (const std::size_t nl = answer_buffer_.find('\n'); nl != std::string::npos) {
        line = answer_buffer_.substr(0, nl);
        answer_buffer_.erase(0, nl + 1);
        return Got::line;
      }
      if (answer_buffer_.size() > kAnswerMax) {
        line = answer_buffer_;
        answer_buffer_.clear();
        end(/*grace_s=*/0);
        return Got::garbage;
      }
      if (stop && stop()) {
        end(/*grace_s=*/0);
        return Got::stopped;
      }
      if (Clock::now() > deadline) {
        end(/*grace_s=*/0);
        return Got::timed_out;
      }
      pollfd fds[2] = {{answers_, POLLIN, 0}, {log_, POLLIN, 0}};
      const int ready = ::poll(fds, log_ >= 0 ? 2 : 1, 50);
      if (ready < 0 && errno != EINTR) return reap_now();
      drain_log();
      if (!read_answers()) {
        // An answer and then the end (a worker that exits after each point, or dies right after
        // answering): the answer stands; the next point starts a new worker.
        if (const std::size_t nl = answer_buffer_.find('\n'); nl != std::string::npos) {
          line = answer_buffer_.substr(0, nl);
          reap_now();
          return Got::line;
        }
        return reap_now();
      }
    }
  }

  // False at end of file: the worker exited or closed its answer fd.
  bool read_answers() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(answers_, buf, sizeof buf);
      if (n > 0) {
        answer_buffer_.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) return false;
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
  }

  void drain_log() {
    if (log_ < 0) return;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(log_, buf, sizeof buf);
      if (n <= 0) {
        if (n == 0) {
          ::close(log_);
          log_ = -1;
        }
        return;
      }
      log_text_.append(buf, static_cast<std::size_t>(n));
      log_total_ += static_cast<std::uint64_t>(n);
      if (log_text_.size() > 2 * kLogKeep) log_text_.erase(0, log_text_.size() - kLogKeep);
    }
  }

  std::string_view log_since_mark() const {
    const std::uint64_t kept_from = log_total_ - log_text_.size();
    const std::uint64_t from = std::max(log_mark_, kept_from);
    return std::string_view(log_text_).substr(static_cast<std::size_t>(from - kept_from));
  }

  // The worker is gone (or has closed its answer fd): collect what it printed last, end it.
  Got reap_now() {
    if (!wait_exit(1.0)) {
      // Alive without an answer fd: it can no longer take part; end it.
      ::kill(-pid_, SIGKILL);
    }
    for (int i = 0; i < 20 && log_ >= 0; ++i) {
      drain_log();
      if (log_ >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    end(/*grace_s=*/0);
    return Got::exited;
  }

  // True when the process has exited within `seconds` (left unreaped: end() reaps it).
  bool wait_exit(double seconds) {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(seconds));
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid_)
        return true;
      if (Clock::now() >= until) return false;
      drain_log();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  pid_t pid_ = -1;
  int requests_ = -1, answers_ = -1, log_ = -1;
  int status_ = 0;
  std::uint64_t last_id_ = 0;
  std::string answer_buffer_;
  std::string log_text_;         // the last kLogKeep..2*kLogKeep bytes of stdout and stderr
  std::uint64_t log_total_ = 0;  // bytes ever read from the log
  std::uint64_t log_mark_ = 0;   // log_total_ when the current request was sent
};

// Workers by variant name and command; guarded, in case two threads ever run points.
struct Pool {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Worker>> workers;
  int started = 0;
  ~Pool() {
    for (auto& [key, worker] : workers) worker->end(/*grace_s=*/2);
  }
};

Pool& pool() {
  static Pool p;
  return p;
}

// The status an answer line gives, or nullopt when it is not the protocol's answer to `id`.
std::optional<Status> answer_status(const std::string& line, std::uint64_t id) {
  if (io::json_text_error(line)) return std::nullopt;  // {"status": "failed", "status": "done"}
  const json a = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() ||
      a["id"].get<std::uint64_t>() != id || !a.contains("status") || !a["status"].is_string())
    return std::nullopt;
  const std::string status = a["status"].get<std::string>();
  auto text = [&a](const char* key) {
    return a.contains(key) && a[key].is_string() ? quote_tail(a[key].get<std::string>())
                                                 : std::string();
  };
  if (status == "done") return Status::ok();
  if (status == "failed") {
    const std::string error = text("error");
    return Status::failed("external worker: " +
                          (error.empty() ? "failed, no reason given" : error));
  }
  if (status == "skipped") {
    const std::string reason = text("reason");
    return Status::skipped("external worker: " + (reason.empty() ? "no reason given" : reason));
  }
  return std::nullopt;
}

}  // namespace
}  // namespace worker_detail

ExternalResult run_worker_point(const Variant::External& external, const std::string& name,
                                numerics::Format format, const ExternalContext& context,
                                const attention::Shape& expected) {
  ExternalResult r;
  worker_detail::Pool& p = worker_detail::pool();
  const std::lock_guard lock(p.mutex);
  std::unique_ptr<worker_detail::Worker>& worker = p.workers[name + '\n' + external.command];
  if (!worker || !worker->running()) {
    worker = std::make_unique<worker_detail::Worker>();
    ++p.started;
    const std::string error =
        worker->start(external.command, external.start_timeout_s, context.stop_requested);
    if (!error.empty()) {
      r.status = worker->said_skip() ? Status::skipped(error) : Status::failed(error);
      return r;
    }
  }
  const std::filesystem::path output = context.work_dir / "output.safetensors";
  std::error_code ec;
  // A stale O from an earlier point must never be read as this point's.
  std::filesystem::remove(output, ec);
  std::filesystem::remove(output.string() + ".npy", ec);
  const std::uint64_t id = worker->next_id();
  const nlohmann::json request = {{"id", id},
                                  {"inputs", context.inputs_file.string()},
                                  {"output", output.string()},
                                  {"format", numerics::format_name(format)},
                                  {"axes", context.axes}};
  std::string line;
  const worker_detail::Worker::Got got =
      worker->ask(request, external.timeout_s, context.stop_requested, line);
  const std::string expected_answer =
      R"({"id": )" + std::to_string(id) + R"(, "status": "done"|"failed"|"skipped"})";
  if (got != worker_detail::Worker::Got::line) {
    r.status = Status::failed(worker->failure_text(got, external.timeout_s, line,
                                                   "while computing the point", expected_answer));
    worker->end(/*grace_s=*/0);
    return r;
  }
  const std::optional<Status> status = worker_detail::answer_status(line, id);
  if (!status) {
    r.status =
        Status::failed(worker->failure_text(worker_detail::Worker::Got::garbage, external.timeout_s,
                                            line, "to a point", expected_answer));
    worker->end(/*grace_s=*/0);
    return r;
  }
  if (!status->is_ok()) {
    r.status = *status;
    return r;
  }
  return read_external_output(output, expected, "external worker answered done", "");
}

void end_workers() {
  worker_detail::Pool& p = worker_detail::pool();
  const std::lock_guard lock(p.mutex);
  for (auto& [key, worker] : p.workers) worker->end(/*grace_s=*/2);
  p.workers.clear();
}

int workers_started() {
  worker_detail::Pool& p = worker_detail::pool();
  const std::lock_guard lock(p.mutex);
  return p.started;
}

}  // namespace attndev::experiment
