#include "experiment/cluster/slurm_script.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/json_strict.hpp"

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

// Options the generator writes itself, with the flag of `attndev slurm` that sets each: given
// through --sbatch they would contradict a line of the script (SLURM keeps the last, silently).
struct OwnedOption {
  std::string_view name;
  std::string_view use;
};
constexpr OwnedOption kOwnedOptions[] = {
    {"array", "the array is one task per shard (--shards); resubmit parts with submit.sh LIST"},
    {"job-name", "use --job-name"},
    {"output", "task logs go to DIR/slurm/logs, which merge and the docs rely on"},
    {"error", "task logs go to DIR/slurm/logs, which merge and the docs rely on"},
    {"open-mode", "requeued tasks append to their log"},
    {"requeue", "tasks are always requeueable"},
    {"signal", "the signal lead follows --time"},
    {"ntasks", "each array task is one runner process"},
    {"cpus-per-task", "use --cpus-per-task"},
    {"gpus-per-task", "use --gpus-per-task"},
    {"partition", "use --partition"},
    {"time", "use --time"},
    {"mem", "use --mem"},
    {"constraint", "use --constraint"},
    {"gres", "use --gres"},
    {"dependency", "submit.sh chains the merge job afterany the sweep"},
    {"parsable", "submit.sh passes it"},
};

// Options of sbatch whose full name is a prefix of an owned one: given whole, they are themselves.
bool is_other_sbatch_option(std::string_view name) {
  return name == "gpus";
}

// The x86-64 micro-architecture levels as /proc/cpuinfo names their features (lzcnt is "abm").
constexpr std::string_view kFlagsV2[] = {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"};
constexpr std::string_view kFlagsV3[] = {"avx", "avx2", "bmi1",  "bmi2", "f16c",
                                         "fma", "abm",  "movbe", "xsave"};
constexpr std::string_view kFlagsV4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"};

// "attndev 0.1.0 (git abc1234": what two builds of the same source share, whatever their
// compiler or target.
std::string_view version_identity(std::string_view line) {
  return line.substr(0, line.find(", "));
}

void validate_resources(const SlurmOptions& o) {
  if (!o.mem.empty()) {
    const std::size_t digits = o.mem.find_first_not_of("0123456789");
    const bool ok = digits != 0 && o.mem.size() <= 12 &&
                    (digits == std::string::npos ||
                     (digits + 1 == o.mem.size() &&
                      std::string_view("KMGTkmgt").find(o.mem.back()) != std::string_view::npos));
    if (!ok) {
      throw std::invalid_argument("--mem '" + o.mem +
                                  "' is not a SLURM memory size: digits with an optional unit "
                                  "K, M, G or T (e.g. 16G, 4000M; no unit means megabytes)");
    }
  }
  if (!o.constraint.empty() && !all_of_chars(o.constraint, "-_.:&|,[]*()!")) {
    throw std::invalid_argument("--constraint '" + o.constraint +
                                "' is not a SLURM feature expression (feature names joined by "
                                "'&', '|' or ',', no spaces; e.g. avx512 or a100&ib)");
  }
  if (!o.gres.empty() && !all_of_chars(o.gres, "-_.:,")) {
    throw std::invalid_argument("--gres '" + o.gres +
                                "' is not a SLURM gres list (name[:type][:count], several "
                                "separated by ','; e.g. gpu:a100:1)");
  }
}

void validate(const SlurmOptions& o) {
  require_path("the attndev binary path", o.attndev_path);
  // The config is frozen under the output directory: a bad -o is said as -o, not as the path of
  // the copy derived from it.
  require_path("the output directory (-o)", o.output_dir);
  require_path("the config path", o.config_path);
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
  validate_resources(o);
  for (const std::string& option : o.sbatch) split_sbatch_options(option);
  for (const std::string& line : o.setup) {
    if (line.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
      throw std::invalid_argument(
          "setup line contains a newline or NUL: give each line as its own --setup (or its own "
          "string in the config's \"setup\" list)");
    }
  }
  if (o.native_build && !o.allow_native) throw std::invalid_argument(native_refusal(""));
  if (o.native_build && !o.march.empty()) {
    throw std::invalid_argument("a binary is either -march=native or portable (-march=" + o.march +
                                "), not both");
  }
  if (!o.march.empty() && !all_of_chars(o.march, "-_.")) {
    throw std::invalid_argument("-march '" + o.march + "' is not a -march name");
  }
}

// The #SBATCH lines both scripts share: where they run and for how long.
void placement_lines(std::string& s, const SlurmOptions& o) {
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time_limit.empty()) s += "#SBATCH --time=" + o.time_limit + "\n";
  if (!o.mem.empty()) s += "#SBATCH --mem=" + o.mem + "\n";
  if (!o.constraint.empty()) s += "#SBATCH --constraint=" + o.constraint + "\n";
  for (const std::string& option : o.sbatch) {
    for (const std::string& one : split_sbatch_options(option)) s += "#SBATCH " + one + "\n";
  }
}

// The prologue runs under `set -e` so that a failed `module load` stops the job with the line
// in its log instead of running attndev in the wrong environment; it runs before `set -u`,
// since site profile and activate scripts often read unset variables.
void setup_lines(std::string& s, const SlurmOptions& o, std::string_view script) {
  if (o.setup.empty()) return;
  s += "# setup: the config's \"setup\" lines, then --setup lines\n";
  s += "trap 'echo \"" + std::string(script) +
       ": setup line failed (exit $?): $BASH_COMMAND\" >&2' ERR\n";
  s += "set -e\n";
  for (const std::string& line : o.setup) s += line + "\n";
  s += "set +e\n";
  s += "trap - ERR\n";
}

void native_warning(std::string& s, const SlurmOptions& o, std::string_view script) {
  if (!o.native_build) return;
  s += "# WARNING: attndev was built with -march=native (ATTNDEV_NATIVE=ON) and submitted with\n";
  s += "# --allow-native: on a node whose CPU lacks an instruction of the build machine it dies\n";
  s += "# with 'Illegal instruction' (exit 132). Rebuild with -DATTNDEV_NATIVE=OFF if it does.\n";
  s += "echo \"WARNING: " + std::string(script) +
       ": attndev built with -march=native runs on $(hostname); "
       "'Illegal instruction' means this node's CPU differs from the build machine's: rebuild "
       "with -DATTNDEV_NATIVE=OFF\" >&2\n";
}

// A portable binary's jobs check the node before it starts: on a CPU without a feature of its
// -march it would die with 'Illegal instruction' (exit 132), which says neither what nor where.
void isa_check(std::string& s, const SlurmOptions& o, std::string_view script) {
  if (o.march.empty()) return;
  const std::string who = std::string(script);
  const auto flags = march_cpu_flags(o.march);
  if (!flags) {
    s += "# attndev was built with -march=" + o.march + ", whose CPU features `attndev slurm`\n";
    s += "# cannot check: on a node without one it dies with 'Illegal instruction' (exit 132).\n";
    s += "echo \"WARNING: " + who + ": attndev built with -march=" + o.march +
         " runs on $(hostname) unchecked; 'Illegal instruction' means this node's CPU lacks a "
         "feature of -march=" +
         o.march + "\" >&2\n";
    return;
  }
  if (flags->empty()) return;
  std::string list;
  for (std::string_view flag : *flags) list += (list.empty() ? "" : " ") + std::string(flag);
  s += "# attndev was built with -march=" + o.march + ": stop on a node whose CPU lacks one of\n";
  s += "# its features (read from /proc/cpuinfo) rather than die there with 'Illegal "
       "instruction'.\n";
  s += "attndev_cpu=\" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) \"\n";
  s += "attndev_missing=\"\"\n";
  s += "for attndev_flag in " + list + "; do\n";
  s += "  case \"$attndev_cpu\" in *\" $attndev_flag \"*) ;; "
       "*) attndev_missing=\"$attndev_missing $attndev_flag\" ;; esac\n";
  s += "done\n";
  s += "if [ -z \"${attndev_cpu// /}\" ]; then\n";
  s += "  echo \"WARNING: " + who +
       ": cannot read the CPU flags of $(hostname) from /proc/cpuinfo; " +
       "attndev needs -march=" + o.march + " (" + list + ")\" >&2\n";
  s += "elif [ -n \"$attndev_missing\" ]; then\n";
  s +=
      "  echo \"" + who + ": node $(hostname) lacks CPU features of -march=" + o.march +
      ", which this attndev was built for:$attndev_missing. Keep the jobs off such nodes " +
      "(attndev slurm --constraint FEATURE, or --sbatch --exclude=$(hostname)), or build for an " +
      "older target (cmake -DATTNDEV_NATIVE=OFF -DATTNDEV_PORTABLE_MARCH=x86-64-v2, or empty for " +
      "any x86-64) and regenerate the scripts\" >&2\n";
  s += "  exit 1\n";
  s += "fi\n";
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
  if (!o.gres.empty()) s += "#SBATCH --gres=" + o.gres + "\n";
  placement_lines(s, o);
  if (const auto limit = parse_slurm_time(o.time_limit); limit && *limit > 0) {
    s += "#SBATCH --signal=TERM@" + std::to_string(signal_lead_seconds(*limit)) + "\n";
  }
  // A requeued task (node failure, preemption) reruns the same shard and resumes from its file;
  // append keeps the log of the earlier attempt.
  s += "#SBATCH --requeue\n";
  s += "#SBATCH --open-mode=append\n";
  s += "#SBATCH --output=" + out_dir + "/" + std::string(kSlurmLogSubdir) + "/%A_%a.out\n";
  native_warning(s, o, "sweep.sbatch");
  isa_check(s, o, "sweep.sbatch");
  setup_lines(s, o, "sweep.sbatch");
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
  native_warning(s, o, "merge.sbatch");
  isa_check(s, o, "merge.sbatch");
  setup_lines(s, o, "merge.sbatch");
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

std::vector<std::string> split_sbatch_options(std::string_view text) {
  std::vector<std::string> options;
  std::size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    options.emplace_back(text.substr(i, end - i));
    i = end;
  }
  if (options.empty()) {
    throw std::invalid_argument(
        "--sbatch '': no option given; pass e.g. --sbatch \"--account=proj --qos=normal\"");
  }
  for (const std::string& option : options) {
    const std::size_t eq = option.find('=');
    const bool dashes = option.size() > 2 && option.compare(0, 2, "--") == 0;
    const std::string name =
        dashes ? option.substr(2, eq == std::string::npos ? eq : eq - 2) : std::string();
    const bool long_form = dashes && !name.empty() &&
                           std::isalpha(static_cast<unsigned char>(name.front())) &&
                           all_of_chars(name, "-");
    // The value lands in an `#SBATCH` line, which sbatch splits on white space and reads no
    // further after '#': quotes and comments cannot be carried.
    const bool plain_value =
        eq == std::string::npos ||
        (eq + 1 < option.size() && option.find_first_of("'\"\\#`$", eq + 1) == std::string::npos);
    if (!long_form || !plain_value) {
      throw std::invalid_argument(
          "--sbatch '" + option +
          "' does not look like an sbatch option: write each as --name or --name=value without "
          "quotes or '#' (e.g. --account=proj, --qos=normal, --exclusive; short forms such as "
          "'-A proj' as --account=proj)");
    }
    // sbatch parses long options with getopt_long, which takes any unambiguous prefix of a name
    // for the option itself: --arr is --array, --out is --output. A prefix of an owned option is
    // therefore refused as the option, except where it is the full name of another option.
    for (const OwnedOption& owned : kOwnedOptions) {
      const bool prefix = owned.name.substr(0, name.size()) == name;
      if (!prefix || is_other_sbatch_option(name)) continue;
      const std::string reads =
          name == owned.name ? std::string()
                             : " (sbatch reads --" + name + " as --" + std::string(owned.name) +
                                   ": it accepts any unambiguous prefix of an option)";
      throw std::invalid_argument("--sbatch '" + option + "'" + reads +
                                  ": the generated scripts set --" + std::string(owned.name) +
                                  " themselves (" + std::string(owned.use) + ")");
    }
  }
  return options;
}

SetupSplit split_setup_key(std::string_view config_text) {
  SetupSplit split;
  split.config = std::string(config_text);
  // Unreadable JSON is left for the config parser, whose message says where it breaks.
  if (io::json_text_error(config_text)) return split;
  nlohmann::json root = nlohmann::json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object() || !root.contains("setup")) return split;
  const nlohmann::json& setup = root["setup"];
  const auto bad = [] {
    return std::invalid_argument(
        "setup: expected a string or a list of strings, one shell line each (e.g. [\"module "
        "load gcc\", \"source ~/venv/bin/activate\"])");
  };
  if (setup.is_string()) {
    split.setup.push_back(setup.get<std::string>());
  } else if (setup.is_array()) {
    for (const nlohmann::json& line : setup) {
      if (!line.is_string()) throw bad();
      split.setup.push_back(line.get<std::string>());
    }
  } else {
    throw bad();
  }
  root.erase("setup");
  split.config = root.dump(2) + "\n";
  split.had_key = true;
  return split;
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

std::optional<std::vector<std::string_view>> march_cpu_flags(std::string_view march) {
  std::vector<std::string_view> flags;
  if (march == "x86-64") return flags;
  const int level = march == "x86-64-v2"   ? 2
                    : march == "x86-64-v3" ? 3
                    : march == "x86-64-v4" ? 4
                                           : 0;
  if (level == 0) return std::nullopt;
  flags.insert(flags.end(), std::begin(kFlagsV2), std::end(kFlagsV2));
  if (level >= 3) flags.insert(flags.end(), std::begin(kFlagsV3), std::end(kFlagsV3));
  if (level >= 4) flags.insert(flags.end(), std::begin(kFlagsV4), std::end(kFlagsV4));
  return flags;
}

std::string native_refusal(std::string_view looked_for) {
  std::string where =
      looked_for.empty() ? std::string() : " (none at " + std::string(looked_for) + ")";
  return "this attndev was built with -march=native (CMake option ATTNDEV_NATIVE=ON, the "
         "default): it uses every instruction of the CPU that compiled it, and on a compute node "
         "with an older or different CPU it dies with 'Illegal instruction'. The jobs need a "
         "portable attndev" +
         where +
         ": scripts/run.sh builds one in build/portable beside build/release, which `attndev "
         "slurm` then uses by itself; or build one anywhere (cmake -B build/portable "
         "-DATTNDEV_NATIVE=OFF && cmake --build build/portable --target attndev) and pass "
         "--attndev PATH; or pass --allow-native if every node has this machine's CPU";
}

std::optional<std::string> version_line_isa(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty() || line.back() != ')') return std::nullopt;
  line.remove_suffix(1);
  const auto comma = line.rfind(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string_view last = line.substr(comma + 2);
  if (last == "default -march") return std::string("default");
  constexpr std::string_view kMarch = "-march=";
  if (last.substr(0, kMarch.size()) != kMarch || last.size() == kMarch.size()) return std::nullopt;
  return std::string(last.substr(kMarch.size()));
}

std::string portable_sibling(std::string_view self) {
  const std::filesystem::path path(self);
  const std::filesystem::path app_dir = path.parent_path();  // build/<preset>/apps/attndev
  const std::filesystem::path build_dir = app_dir.parent_path().parent_path();  // build/<preset>
  if (path.filename() != "attndev" || app_dir.filename() != "attndev" ||
      app_dir.parent_path().filename() != "apps" || build_dir.parent_path().filename() != "build" ||
      build_dir.filename() == "portable") {
    return "";
  }
  return (build_dir.parent_path() / "portable" / "apps" / "attndev" / "attndev").string();
}

JobBinary choose_job_binary(
    const JobBinaryRequest& r,
    const std::function<std::optional<std::string>(const std::string&)>& version_of) {
  // A candidate other than the running binary must be this build's source, or the jobs would
  // compute with other code than the one that checked the config.
  const auto probe = [&](const std::string& path, std::string_view what,
                         std::string_view fix) -> std::optional<JobBinary> {
    const std::optional<std::string> line = version_of(path);
    if (!line) return std::nullopt;
    const std::optional<std::string> isa = version_line_isa(*line);
    if (!isa || version_identity(*line) != version_identity(r.self_version)) {
      std::string shown = *line;
      while (!shown.empty() && (shown.back() == '\n' || shown.back() == '\r')) shown.pop_back();
      throw std::invalid_argument(std::string(what) + " " + path + " is another build ('" + shown +
                                  "') than this one ('" + r.self_version +
                                  "'): the jobs would run other code; " + std::string(fix));
    }
    return JobBinary{path, *isa, ""};
  };
  if (!r.explicit_path.empty()) {
    auto chosen = probe(r.explicit_path, "--attndev",
                        "rebuild it from this source tree, or pass this binary's own path");
    if (!chosen) {
      throw std::invalid_argument("--attndev " + r.explicit_path +
                                  ": no attndev runs there (`--version` failed)");
    }
    if (chosen->path != r.self) {
      chosen->note = "the jobs run " + chosen->path + " (" +
                     (chosen->isa == "default" ? "default -march" : "-march=" + chosen->isa) + ")";
    }
    return *chosen;
  }
  if (r.self_isa != "native" || r.allow_native) return JobBinary{r.self, r.self_isa, ""};
  const std::string sibling = portable_sibling(r.self);
  if (sibling.empty()) throw std::invalid_argument(native_refusal(""));
  auto chosen = probe(sibling, "the portable build",
                      "rebuild it (scripts/run.sh, or cmake --build build/portable --target "
                      "attndev), or pass --allow-native to run this -march=native binary");
  if (!chosen || chosen->isa == "native") throw std::invalid_argument(native_refusal(sibling));
  chosen->note = "this attndev is -march=native: the jobs run the portable build " + chosen->path +
                 " (" + (chosen->isa == "default" ? "default -march" : "-march=" + chosen->isa) +
                 "; same results, --allow-native runs this one)";
  return *chosen;
}

SlurmScripts make_slurm_scripts(const SlurmOptions& options) {
  validate(options);
  return SlurmScripts{render_sweep(options), render_merge(options), render_submit(options)};
}

}  // namespace attndev::experiment
