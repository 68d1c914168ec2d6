#include "io/provenance.hpp"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <vector>

#ifndef ATTNDEV_VERSION
#error "lib/io/CMakeLists.txt defines ATTNDEV_VERSION and ATTNDEV_COMPILER"
#endif

namespace attndev::io {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
  }
  return "unknown";
}

// The command line as the kernel saw it: main() need not hand argv to every library that writes
// a result.
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string current;
  for (char c : raw) {
    if (c == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) args.push_back(current);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return quote_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

const char* tool_version() {
  return ATTNDEV_VERSION;
}
// git_revision() is generated at build time (cmake/git_revision.cmake).
const char* compiler_name() {
  return ATTNDEV_COMPILER;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

Provenance collect_provenance() {
  Provenance p;
  p.tool_version = tool_version();
  p.git_revision = git_revision();
  p.compiler = compiler_name();
  p.command_line = own_command_line();
  p.cpu_model = cpu_model_name();
  p.gpu = "none";
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) p.hostname = host;
  p.time_utc = utc_now_iso8601();
  p.slurm_job_id = env_or_empty("SLURM_JOB_ID");
  p.slurm_array_job_id = env_or_empty("SLURM_ARRAY_JOB_ID");
  p.slurm_array_task_id = env_or_empty("SLURM_ARRAY_TASK_ID");
  return p;
}

Json to_json(const Provenance& p) {
  return Json{{"tool_version", p.tool_version},
              {"git_revision", p.git_revision},
              {"compiler", p.compiler},
              {"command_line", p.command_line},
              {"cpu_model", p.cpu_model},
              {"gpu", p.gpu},
              {"hostname", p.hostname},
              {"time_utc", p.time_utc},
              {"slurm_job_id", p.slurm_job_id},
              {"slurm_array_job_id", p.slurm_array_job_id},
              {"slurm_array_task_id", p.slurm_array_task_id}};
}

std::string quote_command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i) out += ' ';
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) {
        if (c == '\'') {
          out += "'\\''";
        } else {
          out += c;
        }
      }
      out += '\'';
    }
  }
  return out;
}

}  // namespace attndev::io
