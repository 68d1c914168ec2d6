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

#include <functional>
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
  // The -march of a portable binary (CMake's ATTNDEV_PORTABLE_MARCH, e.g. "x86-64-v3"): both jobs
  // first check that their node's CPU has that level's features (/proc/cpuinfo) and stop with a
  // message naming the node and what it lacks, where the binary would die with SIGILL. Empty (the
  // compiler's default, any x86-64): nothing to check.
  std::string march;
};

struct SlurmScripts {
  std::string sweep;   // OUT/slurm/sweep.sbatch: the job array
  std::string merge;   // OUT/slurm/merge.sbatch: `attndev merge OUT`, submitted afterany the array
  std::string submit;  // OUT/slurm/submit.sh [ARRAY]: submits both, prints the two job ids
};

// Where the generated files go inside the output directory.
inline constexpr std::string_view kSlurmSubdir = "slurm";
inline constexpr std::string_view kSlurmLogSubdir = "slurm/logs";

// The CPU features (flag names of /proc/cpuinfo) that code compiled with -march=`march` may use,
// for the x86-64 levels ("x86-64" none, "x86-64-v2", "x86-64-v3", "x86-64-v4"); nullopt for
// another -march, whose features the scripts then cannot check (they say so in the task log).
std::optional<std::vector<std::string_view>> march_cpu_flags(std::string_view march);

// Which attndev binary the jobs run (`attndev slurm`; docs/slurm.md). A -march=native binary
// runs only on CPUs like the build machine's, so where one generates the scripts, its jobs run
// the portable build that scripts/run.sh puts beside it (portable_sibling) when there is one.
struct JobBinaryRequest {
  std::string self;           // absolute path of the running binary
  std::string self_isa;       // its target: "native", a -march ("x86-64-v3"), or "default"
  std::string self_version;   // its `--version` line
  std::string explicit_path;  // `--attndev PATH`, absolute; empty: choose
  bool allow_native = false;  // `--allow-native`: a native binary may run the jobs itself
};
struct JobBinary {
  std::string path;  // absolute
  std::string isa;   // "native", a -march, or "default"
  std::string note;  // one line for the user when the jobs run another binary; else empty
};
// `version_of(path)` runs `path --version` and returns its line, nullopt when nothing runs there.
// A candidate (`--attndev`, the sibling) must print a line of this version and git revision and
// name its target; a native one found beside a native one is no portable build. Throws
// std::invalid_argument with the reason and the fix (a native binary without --allow-native and
// without a portable build beside it: native_refusal).
JobBinary choose_job_binary(
    const JobBinaryRequest& request,
    const std::function<std::optional<std::string>(const std::string&)>& version_of);

// Where scripts/run.sh builds the portable binary, seen from a binary at
// <dir>/build/<preset>/apps/attndev/attndev: <dir>/build/portable/apps/attndev/attndev. Empty
// when `self` is not at such a place, or is that binary.
std::string portable_sibling(std::string_view self);

// The target a `--version` line names ("..., -march=x86-64-v3)" -> "x86-64-v3", "..., default
// -march)" -> "default"); nullopt for a line without one (a binary built before it was printed).
std::optional<std::string> version_line_isa(std::string_view line);

// The refusal of a -march=native binary: what goes wrong on a node and the ways out.
// `looked_for`: where a portable build was looked for (empty: not looked for).
std::string native_refusal(std::string_view looked_for);

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
