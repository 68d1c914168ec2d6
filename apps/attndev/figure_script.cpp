#include "figure_script.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/cluster/slurm_script.hpp"
#include "io/log.hpp"

namespace attndev::app {
namespace {

namespace fs = std::filesystem;

fs::path scripts_dir() {
  if (const char* env = std::getenv("ATTNDEV_SCRIPTS_DIR"); env != nullptr && *env != '\0')
    return env;
  return fs::path(source_tree()) / "scripts";
}

// Runs a shell command with stdout captured (stderr passes through: pip's and the scripts'
// messages reach the user); returns the exit status, -1 when it could not run or was killed.
int shell_capture(const std::string& command, std::string& out) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The plotting environment's python (scripts/plot-venv.sh creates it on first use).
std::string plot_python(const fs::path& scripts, const fs::path& tables) {
  std::string python;
  const std::string command =
      "bash " + experiment::shell_quote((scripts / "plot-venv.sh").string());
  const int rc = shell_capture(command, python);
  while (!python.empty() && (python.back() == '\n' || python.back() == '\r')) python.pop_back();
  if (rc != 0 || python.empty()) {
    log::error(
        "cannot draw: the plotting environment could not be made (plot-venv.sh exit {}, "
        "message above); the tables are written: {}",
        rc, tables.string());
    throw CommandExit{kExitFailure};
  }
  return python;
}

// A new, empty file beside `figure` with its extension (matplotlib picks the format from it),
// created exclusively: nothing planted can be at its name.
fs::path temporary_beside(const fs::path& figure) {
  const fs::path dir = figure.parent_path().empty() ? fs::path(".") : figure.parent_path();
  const std::string ext = figure.extension().string();
  std::string name = (dir / ("." + figure.stem().string() + ".tmp-XXXXXX" + ext)).string();
  const int fd = ::mkstemps(name.data(), static_cast<int>(ext.size()));
  if (fd < 0)
    throw std::runtime_error("cannot create a temporary file beside " + figure.string() + ": " +
                             std::strerror(errno));
  // mkstemps makes the file private (0600); a figure is as readable as any file the user writes.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  return name;
}

}  // namespace

void check_figure_path(const fs::path& figure) {
  struct stat st {};
  if (::lstat(figure.c_str(), &st) != 0) return;  // nothing there yet
  if (S_ISLNK(st.st_mode) || S_ISREG(st.st_mode)) return;
  throw UsageError(figure.string() + " exists and is " +
                   (S_ISDIR(st.st_mode) ? "a folder" : "not a regular file (a device or a FIFO)") +
                   ": a figure replaces only a file; choose another path with -o");
}

void draw_figure(const std::string& script, const std::vector<std::string>& args,
                 const fs::path& figure, const fs::path& tables) {
  using experiment::shell_quote;
  check_figure_path(figure);
  const fs::path scripts = scripts_dir();
  if (!fs::exists(scripts / script) || !fs::exists(scripts / "plot-venv.sh")) {
    log::error(
        "drawing needs scripts/{} and scripts/plot-venv.sh of attndev's source tree, not "
        "found in {}: set ATTNDEV_SCRIPTS_DIR to that folder (the tables are written)",
        script, scripts.string());
    throw CommandExit{kExitFailure};
  }
  const std::string python = plot_python(scripts, tables);
  const fs::path tmp = temporary_beside(figure);
  std::string command = shell_quote(python) + ' ' + shell_quote((scripts / script).string());
  for (const std::string& a : args) command += ' ' + shell_quote(a);
  command += " -o " + shell_quote(tmp.string());
  std::string ignored;
  const int rc = shell_capture(command, ignored);
  std::error_code ec;
  if (rc != 0) {
    fs::remove(tmp, ec);
    log::error("drawing failed ({} exit {}, message above); the tables are written: {}", script, rc,
               tables.string());
    throw CommandExit{kExitFailure};
  }
  // rename(2) replaces whatever name is at `figure` (a link included) and never follows it.
  fs::rename(tmp, figure, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot move the figure into place at " + figure.string() + ": " +
                             ec.message());
  }
}

}  // namespace attndev::app
