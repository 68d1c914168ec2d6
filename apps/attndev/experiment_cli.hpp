// Helpers shared by the experiment commands (run, validate, plan, report, compare, merge):
// config loading with errors mapped to exit 2, --shard parsing.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/runner.hpp"
#include "io/atomic_file.hpp"
#include "io/provenance.hpp"

namespace attndev::app {

struct LoadedConfig {
  experiment::Config config;
  std::string text;  // verbatim, for provenance
};

inline LoadedConfig load_config_or_usage(const std::string& path,
                                         const std::vector<std::string>& overrides) {
  std::string text;
  try {
    text = io::read_file(path, io::kMaxConfigBytes);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string(e.what()) + " (the config file)");
  }
  try {
    return {experiment::parse_config(text, overrides), text};
  } catch (const experiment::ConfigError& e) {
    throw UsageError(path + (e.path().empty() ? "" : ": " + e.path()) + ": " + e.message());
  }
}

// --backend of run, point and bench: where the run's own work (inputs, golden, emulated
// variants) runs.
inline experiment::Backend parse_run_backend(const std::string& text) {
  if (text == "cpu") return experiment::Backend::cpu;
  if (text == "cuda") return experiment::Backend::cuda;
  throw UsageError("--backend: unknown backend \"" + text +
                   "\"; cpu (the emulator) or cuda (inputs, golden and emulated variants on the "
                   "GPU)");
}

struct ShardSpec {
  std::size_t index = 0;
  std::size_t count = 1;
};

inline std::size_t parse_count(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(what + ": expected a non-negative integer, got \"" + text + "\"");
  return static_cast<std::size_t>(std::stoul(text));
}

// "i/N", "auto" (SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT) or "auto/N" (task id from SLURM,
// N given: what a rerun of selected array indices needs, since its task count is not N).
inline ShardSpec parse_shard(const std::string& text) {
  if (text.empty()) return {};
  const auto slash = text.find('/');
  const std::string first = text.substr(0, slash);
  ShardSpec s;
  const char* hint = " (use --shard i/N with 0 <= i < N, --shard auto or --shard auto/N)";
  if (first == "auto") {
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    if (!id)
      throw UsageError(
          std::string("--shard auto: SLURM_ARRAY_TASK_ID is not set (not a job array?)") + hint);
    s.index = parse_count(id, "SLURM_ARRAY_TASK_ID");
    if (slash != std::string::npos) {
      s.count = parse_count(text.substr(slash + 1), "--shard " + text);
    } else {
      const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
      if (!count)
        throw UsageError(std::string("--shard auto: SLURM_ARRAY_TASK_COUNT is not set") + hint);
      s.count = parse_count(count, "SLURM_ARRAY_TASK_COUNT");
      const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
      if (min && parse_count(min, "SLURM_ARRAY_TASK_MIN") != 0)
        throw UsageError("--shard auto: the job array does not start at 0 (SLURM_ARRAY_TASK_MIN=" +
                         std::string(min) +
                         "), so its task count is not the shard count; "
                         "pass the shard count explicitly: --shard auto/N");
    }
  } else {
    if (slash == std::string::npos) throw UsageError("--shard " + text + ": expected i/N" + hint);
    s.index = parse_count(first, "--shard " + text);
    s.count = parse_count(text.substr(slash + 1), "--shard " + text);
  }
  if (s.count == 0)
    throw UsageError("--shard " + text + ": the shard count is 0; it must be at least 1" + hint);
  if (s.index >= s.count)
    throw UsageError("--shard " + text + ": shard index " + std::to_string(s.index) +
                     " is not in 0.." + std::to_string(s.count - 1) + hint);
  return s;
}

// Runs a loaded config into `out` as `attndev run` does (plan, memory check, resume, stop signals,
// progress; no summary printed), for commands that run a config they built (`attribute`).
// `label` names the config in messages. Throws UsageError as run does and CommandExit{75} when
// interrupted; failed rows are the caller's to report (RunReport counts them).
experiment::RunReport run_loaded_config(const LoadedConfig& loaded, const std::string& label,
                                        const std::string& out, int threads, bool force);

}  // namespace attndev::app
