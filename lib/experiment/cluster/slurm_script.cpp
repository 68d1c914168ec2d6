#include "experiment/cluster/slurm_script.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

namespace attndev::experiment {
namespace {

bool all_of_chars(std::string_view text, std::string_view extra) {
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

// A field of digits that fits a long with room to multiply by 86400.
std::optional<long> parse_field(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void require_path(std::string_view what, const std::string& path) {
  if (path.empty() || path.front() != '/') {
    throw std::invalid_argument(std::string(what) + " must be an absolute path, got '" + path +
                                "'");
  }
  if (path.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
    throw std::invalid_argument(std::string(what) + " contains a newline or NUL: rename it");
  }
}

void validate(const SlurmOptions& o) {
  require_path("the attndev binary path", o.attndev_path);
  require_path("the config path", o.config_path);
  require_path("the output directory (-o)", o.output_dir);
  // The output directory appears in `#SBATCH --output=` lines, which sbatch splits on white space
  // and where '%' starts a file-name pattern (%A, %a, %j): no quoting can carry these through.
  if (o.output_dir.find_first_of(" \t'\"\\%") != std::string::npos) {
    throw std::invalid_argument("the output directory (-o) '" + o.output_dir +
                                "' contains a space, quote, backslash or '%', which #SBATCH "
                                "--output lines cannot carry: choose a plainer path");
  }
  if (o.job_name.empty() || o.job_name.size() > 64 || !all_of_chars(o.job_name, "-_.")) {
    throw std::invalid_argument("job name '" + o.job_name +
                                "' must be 1-64 letters, digits, '-', '_' or '.'");
  }
  if (o.shards < 1) {
    throw std::invalid_argument("--shards must be at least 1, got " + std::to_string(o.shards));
  }
  if (!o.partition.empty() && !all_of_chars(o.partition, "-_.,")) {
    throw std::invalid_argument("--partition '" + o.partition +
                                "' is not a partition name (letters, digits, '-', '_', '.'; "
                                "several separated by ',')");
  }
  if (!o.time_limit.empty() && !parse_slurm_time(o.time_limit)) {
    throw std::invalid_argument("--time '" + o.time_limit +
                                "' is not a SLURM time: use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM "
                                "or D-HH:MM:SS (e.g. 90, 2:00:00, 1-12)");
  }
  if (o.cpus_per_task < 1) {
    throw std::invalid_argument("--cpus-per-task must be at least 1, got " +
                                std::to_string(o.cpus_per_task));
  }
  if (o.gpus_per_task < 0) {
    throw std::invalid_argument("--gpus-per-task must be 0 or more, got " +
                                std::to_string(o.gpus_per_task));
  }
}

// The #SBATCH lines both scripts share: where they run and for how long.
void placement_lines(std::string& s, const SlurmOptions& o) {
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time_limit.empty()) s += "#SBATCH --time=" + o.time_limit + "\n";
}

std::string render_sweep(const SlurmOptions& o) {
  const std::string n = std::to_string(o.shards);
  const std::string cpus = std::to_string(o.cpus_per_task);
  const std::string gpus = std::to_string(o.gpus_per_task);
  const std::string out_dir = o.output_dir;
  std::string s;
  s += "#!/bin/bash\n";
  s +=
      "# attndev sweep '" + o.job_name + "' as a SLURM job array: task i runs shard i/" + n + ".\n";
  s += "# Written by `attndev slurm`; regenerate it rather than edit it. Resubmit the tasks that\n";
  s += "# `attndev merge` reports missing with: " + out_dir + "/slurm/submit.sh LIST\n";
  s += "#SBATCH --job-name=" + o.job_name + "\n";
  s += "#SBATCH --array=0-" + std::to_string(o.shards - 1) + "\n";
  s += "#SBATCH --ntasks=1\n";
  s += "#SBATCH --cpus-per-task=" + cpus + "\n";
  if (o.gpus_per_task > 0) s += "#SBATCH --gpus-per-task=" + gpus + "\n";
  placement_lines(s, o);
  if (const auto limit = parse_slurm_time(o.time_limit); limit && *limit > 0) {
    s += "#SBATCH --signal=TERM@" + std::to_string(signal_lead_seconds(*limit)) + "\n";
  }
  // A requeued task (node failure, preemption) reruns the same shard and resumes from its file;
  // append keeps the log of the earlier attempt.
  s += "#SBATCH --requeue\n";
  s += "#SBATCH --open-mode=append\n";
  s += "#SBATCH --output=" + out_dir + "/" + std::string(kSlurmLogSubdir) + "/%A_%a.out\n";
  s += "set -u\n";
  s += "shards=" + n + "\n";
  s += "task=\"${SLURM_ARRAY_TASK_ID:-}\"\n";
  s += "if ! [[ \"$task\" =~ ^[0-9]+$ ]] || [ \"$task\" -ge \"$shards\" ]; then\n";
  s += "  echo \"sweep.sbatch: must run as array task 0..$((shards - 1)) of this sweep, got "
       "'$task'\" >&2\n";
  s += "  exit 2\n";
  s += "fi\n";
  s += "export OMP_NUM_THREADS=" + cpus + "\n";
  s += "echo \"attndev shard $task/$shards: job ${SLURM_JOB_ID:-?} on $(hostname), restart "
       "${SLURM_RESTART_COUNT:-0}, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}\"\n";
  s += "# srun makes the runner a job step: scancel, --signal and the time limit then deliver\n";
  s += "# SIGTERM to it (not only to this shell); it flushes, exits 75, and a rerun resumes.\n";
  s += "exec srun --ntasks=1 --cpus-per-task=" + cpus;
  if (o.gpus_per_task > 0) s += " --gpus-per-task=" + gpus;
  s += " \\\n  " + shell_quote(o.attndev_path) + " run " + shell_quote(o.config_path) + " -o " +
       shell_quote(out_dir) + " --shard \"auto/$shards\"\n";
  return s;
}

std::string render_merge(const SlurmOptions& o) {
  std::string s;
  s += "#!/bin/bash\n";
  s +=
      "# Merges the shards of attndev sweep '" + o.job_name + "' and reports missing points with\n";
  s += "# the --array list that reruns them. Submitted with --dependency=afterany on the sweep, "
       "so\n";
  s += "# it runs however the tasks ended.\n";
  s += "#SBATCH --job-name=" + o.job_name + "-merge\n";
  s += "#SBATCH --ntasks=1\n";
  s += "#SBATCH --cpus-per-task=1\n";
  placement_lines(s, o);
  s += "#SBATCH --output=" + o.output_dir + "/" + std::string(kSlurmLogSubdir) + "/merge_%j.out\n";
  s += "exec " + shell_quote(o.attndev_path) + " merge " + shell_quote(o.output_dir) + "\n";
  return s;
}

std::string render_submit(const SlurmOptions& o) {
  const std::string here = shell_quote(o.output_dir + "/" + std::string(kSlurmSubdir));
  std::string s;
  s += "#!/bin/bash\n";
  s += "# Submits attndev sweep '" + o.job_name + "': the whole array (0-" +
       std::to_string(o.shards - 1) + "), or only the\n";
  s += "# tasks given (submit.sh 2,5 as printed by `attndev merge`), then the merge job after\n";
  s += "# all of them have ended. Prints sweep_job=ID and merge_job=ID.\n";
  s += "set -euo pipefail\n";
  s += "here=" + here + "\n";
  s += "if [ $# -gt 1 ]; then echo \"usage: $0 [ARRAY_LIST]\" >&2; exit 2; fi\n";
  s += "array=()\n";
  s += "if [ $# -eq 1 ]; then array=(\"--array=$1\"); fi\n";
  // --parsable prints "id" or, on a federation, "id;cluster".
  s += "sweep=$(sbatch --parsable \"${array[@]}\" \"$here/sweep.sbatch\")\n";
  s += "sweep=${sweep%%;*}\n";
  s += "echo \"sweep_job=$sweep\"\n";
  s += "merge=$(sbatch --parsable --dependency=afterany:\"$sweep\" \"$here/merge.sbatch\")\n";
  s += "merge=${merge%%;*}\n";
  s += "echo \"merge_job=$merge\"\n";
  return s;
}

}  // namespace

std::optional<long> parse_slurm_time(std::string_view text) {
  const std::string up = upper(text);
  if (up == "UNLIMITED" || up == "INFINITE") return 0;
  long days = 0;
  std::string_view rest = text;
  const bool has_days = rest.find('-') != std::string_view::npos;
  if (has_days) {
    const auto dash = rest.find('-');
    const auto d = parse_field(rest.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    rest = rest.substr(dash + 1);
  }
  std::vector<long> fields;
  for (std::string_view part : split(rest, ':')) {
    const auto v = parse_field(part);
    if (!v) return std::nullopt;
    fields.push_back(*v);
  }
  long seconds = 0;
  if (has_days) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    if (fields.size() > 3) return std::nullopt;
    const long hours = fields[0];
    const long minutes = fields.size() > 1 ? fields[1] : 0;
    const long secs = fields.size() > 2 ? fields[2] : 0;
    seconds = ((days * 24 + hours) * 60 + minutes) * 60 + secs;
  } else if (fields.size() == 1) {
    seconds = fields[0] * 60;  // MM
  } else if (fields.size() == 2) {
    seconds = fields[0] * 60 + fields[1];  // MM:SS
  } else if (fields.size() == 3) {
    seconds = (fields[0] * 60 + fields[1]) * 60 + fields[2];  // HH:MM:SS
  } else {
    return std::nullopt;
  }
  return seconds;  // 0 ("0", "0:00") means no limit in SLURM as well
}

long signal_lead_seconds(long time_limit_seconds) {
  constexpr long kMaxLead = 120;
  return std::max(1L, std::min(kMaxLead, time_limit_seconds / 4));
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string default_job_name(std::string_view config_path) {
  std::string_view stem = config_path;
  if (const auto slash = stem.find_last_of('/'); slash != std::string_view::npos) {
    stem = stem.substr(slash + 1);
  }
  if (const auto dot = stem.find_last_of('.'); dot != std::string_view::npos && dot > 0) {
    stem = stem.substr(0, dot);
  }
  std::string name = "attndev-";
  for (char c : stem) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    name += ok ? c : '_';
  }
  if (name.size() > 64) name.resize(64);
  return name;
}

SlurmScripts make_slurm_scripts(const SlurmOptions& options) {
  validate(options);
  return SlurmScripts{render_sweep(options), render_merge(options), render_submit(options)};
}

}  // namespace attndev::experiment
