// Where a result came from: the tool, the machine, the command, the job.
//
// lib/ must not depend on apps/, so the command fills the tool fields (version, git revision,
// compiler, command line) and collect_host() fills what the library can see for itself.
#pragma once

#include <string>

#include "io/json_values.hpp"

namespace attndev::io {

struct Provenance {
  std::string tool_version;
  std::string git_revision;
  std::string compiler;
  std::string command_line;
  std::string cpu_model;  // /proc/cpuinfo "model name"
  std::string gpu;        // "none" until a CUDA backend reports its device
  std::string hostname;
  std::string time_utc;  // ISO 8601, e.g. 2024-05-01T12:00:00Z
  std::string slurm_job_id;
  std::string slurm_array_job_id;
  std::string slurm_array_task_id;
};

// Fills cpu_model, gpu ("none" unless already set), hostname, time_utc and the SLURM ids from the
// environment; leaves the tool fields alone.
void collect_host(Provenance& provenance);

std::string utc_now_iso8601();

Json to_json(const Provenance& provenance);

// Joins argv with shell quoting where needed, so the line can be pasted back into a shell.
std::string quote_command_line(int argc, const char* const* argv);

}  // namespace attndev::io
