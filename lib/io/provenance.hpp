// Where a result came from: the tool, the machine, the command, the job.
//
// One builder, collect_provenance(), fills every field, and every result attndev writes carries
// its to_json(): results.jsonl "run" records, results.json, summary.md, `point --json`,
// `bench --json`, `list --json`, training records, tensor dumps and `match` output. The tool
// identity (version, git revision, compiler) is compiled into this file (lib/io/CMakeLists.txt),
// so no caller has to pass it in and no output can leave it out.
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

// Every field: tool identity, this process's command line (/proc/self/cmdline, shell-quoted),
// CPU model, gpu ("none": a CUDA backend that reports its device overwrites it), hostname,
// the time now and the SLURM ids of the environment.
Provenance collect_provenance();

// The compiled-in tool identity alone (for --version and tables).
const char* tool_version();  // "0.1.0"
const char* git_revision();  // short hash at build time (+dirty: uncommitted changes), or "unknown"
const char* compiler_name();  // e.g. "GNU 12.2.0"

std::string utc_now_iso8601();

Json to_json(const Provenance& provenance);

// Joins argv with shell quoting where needed, so the line can be pasted back into a shell.
std::string quote_command_line(int argc, const char* const* argv);

}  // namespace attndev::io
