#include "experiment/run/external.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>
#include <vector>

#include "experiment/run/tensor_io.hpp"

namespace attndev::experiment {

namespace {

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The last lines a failing command printed, on one line, short enough for a CSV cell.
std::string tail_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  constexpr std::streamoff kTail = 4096;
  in.seekg(size > kTail ? size - kTail : 0);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  std::string out;
  const std::size_t first = lines.size() > 3 ? lines.size() - 3 : 0;
  for (std::size_t i = first; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  constexpr std::size_t kMax = 400;
  if (out.size() > kMax) out = "..." + out.substr(out.size() - kMax);
  return out;
}

// `empty_note`: say so when stderr is empty (a crash or a hang that printed nothing).
std::string with_tail(std::string message, const std::filesystem::path& stderr_file,
                      bool empty_note = true) {
  const std::string tail = tail_of(stderr_file);
  if (tail.empty()) return empty_note ? message + " (stderr empty)" : message;
  return message + ": " + tail;
}

std::string signal_text(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
}

struct Exit {
  enum class Kind { exited, signaled, timed_out, stopped, spawn_failed } kind = Kind::exited;
  int code = 0;  // exit status or signal number
  std::string error;
};

// Runs `command` through /bin/sh in its own process group, stdout/stderr to files.
Exit run_command(const std::string& command, const std::filesystem::path& stdout_file,
                 const std::filesystem::path& stderr_file, double timeout_s,
                 const std::function<bool()>& stop_requested) {
  Exit result;
  const std::string out_path = stdout_file.string(), err_path = stderr_file.string();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.kind = Exit::Kind::spawn_failed;
    result.error = std::string("fork failed: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec (the parent may have threads).
    ::setpgid(0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with a kill before the child's setpgid
  const auto start = std::chrono::steady_clock::now();
  auto poll = std::chrono::milliseconds(2);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      result.kind = Exit::Kind::spawn_failed;
      result.error = std::string("waitpid failed: ") + std::strerror(errno);
      return result;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool stop = stop_requested && stop_requested();
    if (elapsed > timeout_s || stop) {
      // The whole group: a shell's children (python, a kernel launcher) die with it.
      ::kill(-pid, SIGTERM);
      for (int i = 0; i < 100 && ::waitpid(pid, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.kind = stop ? Exit::Kind::stopped : Exit::Kind::timed_out;
      return result;
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(50));
  }
  if (WIFSIGNALED(status)) {
    result.kind = Exit::Kind::signaled;
    result.code = WTERMSIG(status);
  } else {
    result.code = WEXITSTATUS(status);
  }
  return result;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

std::string expand_command(const std::string& command, numerics::Format format,
                           const ExternalContext& context) {
  const std::filesystem::path output = context.work_dir / "output.safetensors";
  std::string out;
  for (std::size_t i = 0; i < command.size();) {
    if (command[i] != '{') {
      out += command[i++];
      continue;
    }
    const std::size_t close = command.find('}', i);
    const std::string name = command.substr(i + 1, close - i - 1);
    std::string value;
    if (name == "inputs") {
      value = context.inputs_file.string();
    } else if (name == "output") {
      value = output.string();
    } else if (name == "format") {
      value = numerics::format_name(format);
    } else if (context.axes.contains(name)) {
      const nlohmann::json& v = context.axes[name];
      value = v.is_string() ? v.get<std::string>() : v.dump();
    }
    out += shell_quote(value);
    i = close + 1;
  }
  return out;
}

ExternalResult run_external(const Variant::External& external, numerics::Format format,
                            const ExternalContext& context, const attention::Shape& expected) {
  ExternalResult r;
  const std::filesystem::path output = context.work_dir / "output.safetensors";
  const std::filesystem::path out_log = context.work_dir / "stdout.txt";
  const std::filesystem::path err_log = context.work_dir / "stderr.txt";
  std::error_code ec;
  std::filesystem::remove(output, ec);
  const Exit exit = run_command(expand_command(external.command, format, context), out_log, err_log,
                                external.timeout_s, context.stop_requested);
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
  if (!std::filesystem::exists(output, ec) &&
      !std::filesystem::exists(output.string() + ".npy", ec)) {
    r.status = Status::failed(
        with_tail("external command exited 0 but wrote no {output} file", err_log, false));
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
    r.status = Status::failed(with_tail("external " + what, err_log, false));
    return r;
  }
  std::int64_t nan = 0, inf = 0, first = -1;
  for (std::size_t i = 0; i < r.output.o.data.size(); ++i) {
    const double x = r.output.o.data[i];
    if (std::isfinite(x)) continue;
    (std::isnan(x) ? nan : inf) += 1;
    if (first < 0) first = static_cast<std::int64_t>(i);
  }
  if (nan + inf > 0)
    r.status = Status::failed("external output holds " + std::to_string(nan) + " NaN and " +
                              std::to_string(inf) + " infinite value(s) (first at flat index " +
                              std::to_string(first) + ")");
  return r;
}

}  // namespace attndev::experiment
