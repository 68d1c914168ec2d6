// sbatch scripts that run a sweep as a SLURM job array, one array task per shard, plus a merge job.
//
// Pure text generation: no file system, no environment, so every line can be unit-tested.
// `attndev slurm` (apps/attndev/cmd_slurm.cpp) writes the text to OUT/slurm/ and may submit it.
//
// Why the shard count is written into the script (`--shard auto/N`, not plain `auto`):
// SLURM_ARRAY_TASK_COUNT is the size of the array *as submitted*; resubmitting only the missing
// tasks (`sbatch --array=2,5`) gives count=2, which would re-partition the points and run the wrong
// ones. SLURM_ARRAY_TASK_ID, by contrast, is stable, so the runner takes only the task id from
// SLURM.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attndev::experiment {

struct SlurmOptions {
  std::string attndev_path;  // absolute path of the binary the jobs run (the one generating them)
  std::string config_path;   // absolute; the frozen copy of the sweep's config
  std::string output_dir;    // absolute; the runner writes one file set per shard here
  std::string job_name;      // SLURM job name; letters, digits, '-', '_', '.'
  int shards = 1;            // array tasks 0 .. shards-1
  std::string partition;     // empty: the cluster's default partition
  std::string time_limit;    // SLURM syntax ("30", "2:00:00", "1-12"); empty: partition default
  int cpus_per_task = 1;     // OMP_NUM_THREADS follows it
  int gpus_per_task = 0;     // >0: each task gets its own GPU(s) through CUDA_VISIBLE_DEVICES
  std::string mem;           // --mem per node, SLURM syntax ("16G", "4000"); empty: default
  std::string constraint;    // node features ("avx512", "a100&ib"); empty: any node
  std::string gres;          // generic resources of each array task ("gpu:a100:1"); sweep only
  // Further sbatch options, each one "--name" or "--name=value" (`--sbatch`, repeatable; one
  // string may hold several separated by spaces): --account, --qos, --reservation...
  std::vector<std::string> sbatch;
  // Shell lines run in both jobs before attndev (`module load ...`, `source venv/bin/activate`):
  // the config's "setup" followed by `--setup` lines. A failing line stops the job.
  std::vector<std::string> setup;
  // The binary was compiled with -march=native (CMake's ATTNDEV_NATIVE): it may die with SIGILL
  // on a node whose CPU lacks an instruction of the machine that built it. Refused unless
  // allow_native, and then the scripts say so in their log.
  bool native_build = false;
  bool allow_native = false;
};

struct SlurmScripts {
  std::string sweep;   // OUT/slurm/sweep.sbatch: the job array
  std::string merge;   // OUT/slurm/merge.sbatch: `attndev merge OUT`, submitted afterany the array
  std::string submit;  // OUT/slurm/submit.sh [ARRAY]: submits both, prints the two job ids
};

// Where the generated files go inside the output directory.
inline constexpr std::string_view kSlurmSubdir = "slurm";
inline constexpr std::string_view kSlurmLogSubdir = "slurm/logs";

// Validates the options and renders the three scripts. Throws std::invalid_argument with a message
// that names the offending option and says how to fix it; nothing is produced on error.
SlurmScripts make_slurm_scripts(const SlurmOptions& options);

// SLURM's time syntax ("MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS") in seconds;
// nullopt when the text is not one of these forms. 0 for "0", "UNLIMITED" and "INFINITE", which
// SLURM reads as no limit: then there is no deadline to send SIGTERM ahead of.
std::optional<long> parse_slurm_time(std::string_view text);

// How long before the time limit SLURM sends SIGTERM (`--signal=TERM@<lead>`): time for the runner
// to stop at a point boundary and flush (exit 75) before SIGKILL; at most a quarter of the limit,
// so that short jobs still spend most of their time computing.
long signal_lead_seconds(long time_limit_seconds);

// Splits one `--sbatch` value into options ("--account=a --qos=b" -> two) and checks that each
// looks like a long sbatch option that the generator does not already write; throws
// std::invalid_argument naming the option and the fix.
std::vector<std::string> split_sbatch_options(std::string_view text);

// The "setup" key of a config's JSON text (a string or a list of strings, one shell line each)
// and the config text without it: `attndev slurm` writes the prologue into the scripts and
// gives the runner the rest, so the key can never reach the config's hash. `setup` is empty and
// `config` the text unchanged when there is no such key. Throws std::invalid_argument when the
// text is not a JSON object or the key has another type.
struct SetupSplit {
  std::vector<std::string> setup;
  std::string config;
  bool had_key = false;
};
SetupSplit split_setup_key(std::string_view config_text);

// `text` as one word for a POSIX shell (single-quoted; embedded quotes escaped).
std::string shell_quote(std::string_view text);

// A SLURM-safe job name derived from a config file name ("paper/fig3.json" -> "attndev-fig3").
std::string default_job_name(std::string_view config_path);

}  // namespace attndev::experiment
