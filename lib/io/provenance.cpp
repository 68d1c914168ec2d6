#include "io/provenance.hpp"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>

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

}  // namespace

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

void collect_host(Provenance& p) {
  p.cpu_model = cpu_model_name();
  if (p.gpu.empty()) p.gpu = "none";
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) p.hostname = host;
  p.time_utc = utc_now_iso8601();
  p.slurm_job_id = env_or_empty("SLURM_JOB_ID");
  p.slurm_array_job_id = env_or_empty("SLURM_ARRAY_JOB_ID");
  p.slurm_array_task_id = env_or_empty("SLURM_ARRAY_TASK_ID");
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
