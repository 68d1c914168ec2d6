// `attndev slurm CONFIG --shards N -o DIR [--partition P] [--time T] [--cpus-per-task C]
//                [--gpus-per-task G] [--mem M] [--constraint F] [--gres G] [--sbatch OPTS]...
//                [--setup LINE]... [--attndev PATH] [--allow-native] [--job-name NAME]
//                [--submit]`
//
// Writes DIR/slurm/{config.json, sweep.sbatch, merge.sbatch, submit.sh} (docs/slurm.md): a job
// array with one task per shard and a merge job that runs after all of them. With --submit it
// runs submit.sh and prints the job ids. The jobs run this binary, or, where it was built with
// -march=native, the portable build beside it (experiment::choose_job_binary). Everything that
// can be checked here is checked before anything is written, so a refused command leaves no
// half-made folder behind.
#include "io/log.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/cluster/slurm_script.hpp"
#include "experiment_cli.hpp"
#include "io/atomic_file.hpp"
#include "version.hpp"

namespace attndev::app {
namespace {

namespace fs = std::filesystem;

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Runs argv with stdout captured (stderr passes through, so sbatch's own messages reach the
// user); returns the exit status, or -1 when the program could not be started.
int run_capture(const std::vector<std::string>& argv, std::string& out) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Shard counts of the result files already in `dir`: continuing a sweep with another N would
// assign points to shards differently, and `merge` could no longer say which task to rerun.
std::set<std::size_t> existing_shard_counts(const fs::path& dir) {
  std::set<std::size_t> counts;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return counts;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::size_t index = 0;
    std::size_t count = 0;
    if (experiment::parse_shard_file_name(entry.path().filename().string(), index, count)) {
      counts.insert(count);
    }
  }
  return counts;
}

struct Prologue {
  LoadedConfig loaded;             // the config without its "setup" key
  std::vector<std::string> setup;  // the key's lines
};

// The "setup" prologue belongs to the scripts, not to the experiment: it is taken out of the
// config before parsing, so neither the config hash nor the frozen copy the tasks run sees it.
Prologue load_without_setup(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path, io::kMaxConfigBytes);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string(e.what()) + " (the config file)");
  }
  experiment::SetupSplit split;
  try {
    split = experiment::split_setup_key(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(path + ": " + e.what());
  }
  try {
    return {{experiment::parse_config(split.config), split.config}, split.setup};
  } catch (const experiment::ConfigError& e) {
    throw UsageError(path + (e.path().empty() ? "" : ": " + e.path()) + ": " + e.message());
  }
}

struct SlurmArgs {
  std::string config;
  std::string out;
  int shards = 0;
  std::string partition;
  std::string time_limit;
  int cpus_per_task = 1;
  int gpus_per_task = 0;
  std::string job_name;
  std::string mem;
  std::string constraint;
  std::string gres;
  std::vector<std::string> sbatch;
  std::vector<std::string> setup;
  std::string attndev;  // --attndev: the binary the jobs run
  bool allow_native = false;
  bool submit = false;
  bool json = false;
};

// Where the scripts and the frozen config go, under the shared output folder.
struct SlurmPaths {
  fs::path out, slurm_dir, frozen_config;
};

SlurmPaths slurm_paths(const std::string& out_arg) {
  SlurmPaths p;
  p.out = fs::absolute(out_arg).lexically_normal();
  p.slurm_dir = p.out / std::string(experiment::kSlurmSubdir);
  p.frozen_config = p.slurm_dir / "config.json";
  return p;
}

// `path --version`'s line, nullopt when no program runs there.
std::optional<std::string> version_of(const std::string& path) {
  if (::access(path.c_str(), X_OK) != 0 || fs::is_directory(path)) return std::nullopt;
  std::string out;
  if (run_capture({path, "--version"}, out) != 0 || out.empty()) return std::nullopt;
  return out;
}

// The binary the jobs run: this one, the portable build beside a -march=native one, or --attndev.
experiment::JobBinary job_binary(const SlurmArgs& a) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find this executable (/proc/self/exe): " + ec.message());
  experiment::JobBinaryRequest request;
  request.self = self.string();
  request.self_isa = target_isa();
  request.self_version = version_line();
  if (!a.attndev.empty())
    request.explicit_path = fs::absolute(a.attndev).lexically_normal().string();
  request.allow_native = a.allow_native;
  experiment::JobBinary chosen = experiment::choose_job_binary(request, version_of);
  if (!chosen.note.empty()) log::info("slurm: {}", chosen.note);
  return chosen;
}

experiment::SlurmOptions slurm_options(const SlurmArgs& a, const Prologue& prologue,
                                       const SlurmPaths& paths) {
  const experiment::JobBinary binary = job_binary(a);
  experiment::SlurmOptions options;
  options.attndev_path = binary.path;
  options.config_path = paths.frozen_config.string();
  // A trailing '/' from lexically_normal ("dir/") would make "dir//slurm" in the scripts.
  options.output_dir =
      paths.out.has_filename() ? paths.out.string() : paths.out.parent_path().string();
  options.job_name = a.job_name.empty() ? experiment::default_job_name(a.config) : a.job_name;
  options.shards = a.shards;
  options.partition = a.partition;
  options.time_limit = a.time_limit;
  options.cpus_per_task = a.cpus_per_task;
  options.gpus_per_task = a.gpus_per_task;
  options.mem = a.mem;
  options.constraint = a.constraint;
  options.gres = a.gres;
  options.sbatch = a.sbatch;
  options.setup = prologue.setup;
  options.setup.insert(options.setup.end(), a.setup.begin(), a.setup.end());
  options.native_build = binary.isa == "native";
  options.march = binary.isa == "native" || binary.isa == "default" ? "" : binary.isa;
  options.allow_native = a.allow_native;
  return options;
}

// Everything that can refuse the request, checked before a file is written.
void check_slurm_request(const SlurmArgs& a, const SlurmPaths& paths, std::size_t points) {
  if (a.shards >= 1 && static_cast<std::size_t>(a.shards) > points) {
    throw UsageError("--shards " + std::to_string(a.shards) + " is more than the " +
                     std::to_string(points) + " points of " + a.config +
                     ": some tasks would have nothing to run; use --shards " +
                     std::to_string(points) + " or fewer");
  }
  for (std::size_t n : existing_shard_counts(paths.out)) {
    if (n != static_cast<std::size_t>(a.shards)) {
      throw UsageError(paths.out.string() + " already holds results of a " + std::to_string(n) +
                       "-shard run: continue it with --shards " + std::to_string(n) +
                       ", or use another -o folder");
    }
  }
  if (a.submit && !on_path("sbatch")) {
    throw UsageError(
        "--submit: sbatch is not on PATH; run this on a SLURM login node, or "
        "drop --submit and run " +
        (paths.slurm_dir / "submit.sh").string() + " there");
  }
}

void write_slurm_files(const SlurmPaths& paths, const LoadedConfig& loaded,
                       const experiment::SlurmScripts& scripts) {
  // The manifest is written now, once, rather than by N tasks racing to create it; it also
  // refuses a folder that holds another config's results before anything is submitted.
  try {
    experiment::prepare_output_dir(paths.out, loaded.config, /*force_new=*/false);
  } catch (const experiment::OutputDirError& e) {
    throw UsageError(e.what());
  }
  fs::create_directories(paths.out / std::string(experiment::kSlurmLogSubdir));
  // Tasks read this copy, so editing CONFIG after submission cannot split one sweep across two
  // configs (requeued and resubmitted tasks included).
  io::write_file_atomic(paths.frozen_config, loaded.text);
  io::write_file_atomic(paths.slurm_dir / "sweep.sbatch", scripts.sweep);
  io::write_file_atomic(paths.slurm_dir / "merge.sbatch", scripts.merge);
  io::write_file_atomic(paths.slurm_dir / "submit.sh", scripts.submit);
  fs::permissions(paths.slurm_dir / "submit.sh",
                  fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
}

void print_json(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// Prints what was written; with --submit runs submit.sh and prints its output (exit 1 if it
// fails, the scripts kept for a retry).
void report_or_submit(const SlurmArgs& a, const SlurmPaths& paths, std::size_t points) {
  const fs::path& dir = paths.slurm_dir;
  nlohmann::json summary = {{"slurm_dir", dir.string()},
                            {"config", paths.frozen_config.string()},
                            {"points", points},
                            {"shards", a.shards},
                            {"scripts",
                             {(dir / "sweep.sbatch").string(), (dir / "merge.sbatch").string(),
                              (dir / "submit.sh").string()}},
                            {"submitted", false}};
  if (!a.submit) {
    if (a.json)
      print_json(summary);
    else
      std::printf("wrote %s/{sweep.sbatch,merge.sbatch,submit.sh}\nsubmit with: %s/submit.sh\n",
                  dir.c_str(), dir.c_str());
    return;
  }
  std::string submitted;
  const int rc = run_capture({"bash", (dir / "submit.sh").string()}, submitted);
  if (a.json) {
    summary["submitted"] = rc == 0;
    summary["submit_output"] = submitted;
    print_json(summary);
  } else {
    std::fputs(submitted.c_str(), stdout);
  }
  if (rc != 0) {
    log::error(
        "submission failed (submit.sh exit {}); the scripts are in {}: fix the cause "
        "above and run submit.sh",
        rc, dir.string());
    throw CommandExit{kExitFailure};
  }
}

void run_slurm(const SlurmArgs& a) {
  // The "setup" prologue belongs to the scripts, not to the experiment: it is taken out of the
  // config before parsing, so the config hash and the frozen copy the tasks run never see it.
  const Prologue prologue = load_without_setup(a.config);
  const LoadedConfig& loaded = prologue.loaded;
  experiment::Plan plan;
  try {
    plan = experiment::make_plan(loaded.config);
  } catch (const experiment::ConfigError& e) {
    throw UsageError(a.config + ": " + e.what());
  }
  const SlurmPaths paths = slurm_paths(a.out);
  check_slurm_request(a, paths, plan.points.size());
  experiment::SlurmScripts scripts;
  try {
    scripts = experiment::make_slurm_scripts(slurm_options(a, prologue, paths));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  write_slurm_files(paths, loaded, scripts);
  log::info("{}: {} points in {} shards; scripts in {}", loaded.config.name, plan.points.size(),
            a.shards, paths.slurm_dir.string());
  report_or_submit(a, paths, plan.points.size());
}

}  // namespace

void add_slurm_command(cli::Command& app) {
  auto args = std::make_shared<SlurmArgs>();
  cli::Command* cmd = app.add_subcommand(
      "slurm",
      "Write sbatch scripts that run a config as a SLURM job array (one task per shard) "
      "plus a merge job; --submit submits them");
  cmd->add_option("config", args->config, "Experiment config (JSON)")->required();
  cmd->add_option("--shards", args->shards, "Number of shards = array tasks")->required();
  cmd->add_option("-o,--out", args->out, "Output folder shared by all tasks (cluster file system)")
      ->required()
      ->non_empty();
  cmd->add_option("--partition", args->partition, "SLURM partition (default: the cluster's)");
  cmd->add_option("--time", args->time_limit,
                  "Time limit per task, SLURM syntax (30, 2:00:00, 1-12); SIGTERM comes shortly "
                  "before it and the task exits 75 after flushing");
  cmd->add_option("--cpus-per-task", args->cpus_per_task, "CPUs per task (OMP_NUM_THREADS)");
  cmd->add_option("--gpus-per-task", args->gpus_per_task,
                  "GPUs per task (SLURM sets CUDA_VISIBLE_DEVICES)");
  cmd->add_option("--job-name", args->job_name, "SLURM job name (default: attndev-<config stem>)");
  cmd->add_option("--mem", args->mem, "Memory per node, SLURM syntax (16G, 4000M)");
  cmd->add_option("--constraint", args->constraint,
                  "Node features the tasks need (SLURM --constraint: avx512, a100&ib)");
  cmd->add_option("--gres", args->gres, "Generic resources per array task (gpu:a100:1)");
  cmd->add_option("--sbatch", args->sbatch,
                  "Further sbatch options for both jobs, e.g. \"--account=proj --qos=normal\" "
                  "(repeatable; each --name or --name=value)");
  cmd->add_option("--setup", args->setup,
                  "A shell line both jobs run before attndev (repeatable; after the config's "
                  "\"setup\" lines): module load ..., source VENV/bin/activate");
  cmd->add_option("--attndev", args->attndev,
                  "The attndev binary the jobs run (default: this one; for a -march=native one, "
                  "the portable build scripts/run.sh puts in build/portable)");
  cmd->add_flag("--allow-native", args->allow_native,
                "Let a binary built with -march=native (ATTNDEV_NATIVE=ON) run the jobs when "
                "every node has this machine's CPU; refused otherwise");
  cmd->add_flag("--submit", args->submit, "Submit the array and the merge job; print their ids");
  cmd->add_flag("--json", args->json,
                "Print one JSON object (the scripts written, submit.sh's output)");
  cmd->callback([args] { run_slurm(*args); });
}

}  // namespace attndev::app
