// The generated sbatch scripts, checked as text and by running them under bash with stand-in
// `srun` and `sbatch` commands that record their arguments (the real cluster is exercised by
// test/slurm/cluster_test.sh).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "experiment/cluster/slurm_script.hpp"
#include "experiment/spec/config.hpp"

namespace fs = std::filesystem;
using attndev::experiment::default_job_name;
using attndev::experiment::make_slurm_scripts;
using attndev::experiment::parse_slurm_time;
using attndev::experiment::shell_quote;
using attndev::experiment::signal_lead_seconds;
using attndev::experiment::SlurmOptions;
using attndev::experiment::SlurmScripts;
using attndev::experiment::split_sbatch_options;
using attndev::experiment::split_setup_key;

namespace {

SlurmOptions base_options() {
  SlurmOptions o;
  o.attndev_path = "/opt/attn dev/bin/attndev";  // a space: must survive shell quoting
  o.config_path = "/home/u/it's/sweep.json";     // a quote: likewise
  o.output_dir = "/scratch/u/sweep1";
  o.job_name = "attndev-sweep";
  o.shards = 4;
  return o;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text)) {
    if (l == line) return true;
  }
  return false;
}

int count_prefix(const std::string& text, const std::string& prefix) {
  int n = 0;
  for (const auto& l : lines_of(text)) n += l.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// sbatch stops reading #SBATCH directives at the first line that is neither blank nor a comment:
// a directive after a command is silently ignored.
void check_directives_first(const std::string& script) {
  bool in_header = true;
  int directives = 0;
  for (const auto& l : lines_of(script)) {
    const bool comment = l.empty() || l[0] == '#';
    if (!comment) in_header = false;
    if (l.rfind("#SBATCH", 0) == 0) {
      INFO("directive after the first command: " << l);
      CHECK(in_header);
      ++directives;
    }
  }
  CHECK(directives > 0);
}

struct Sandbox {
  fs::path dir;
  Sandbox() {
    dir = fs::temp_directory_path() / ("attndev_slurm_script_" + std::to_string(::getpid()) + "_" +
                                       std::to_string(counter()++));
    fs::remove_all(dir);
    fs::create_directories(dir / "bin");
  }
  ~Sandbox() { fs::remove_all(dir); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  fs::path write(const std::string& name, const std::string& text, bool executable) const {
    const fs::path p = dir / name;
    std::ofstream(p) << text;
    if (executable) {
      fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
    }
    return p;
  }
};

struct Run {
  int status = -1;
  std::string output;
};

Run run_shell(const std::string& command) {
  Run r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) r.output += buf;
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A stand-in for srun/sbatch: appends each argument on its own line to LOG, then a separator.
std::string recorder(const fs::path& log, const std::string& then) {
  return "#!/bin/bash\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + shell_quote(log.string()) +
         "; done\necho --- >> " + shell_quote(log.string()) + "\n" + then + "\n";
}

}  // namespace

TEST_CASE("parse_slurm_time accepts SLURM's forms", "[slurm]") {
  CHECK(parse_slurm_time("30") == 1800);
  CHECK(parse_slurm_time("5:30") == 330);
  CHECK(parse_slurm_time("2:00:00") == 7200);
  CHECK(parse_slurm_time("1-12") == 129600);
  CHECK(parse_slurm_time("1-0:30") == 88200);
  CHECK(parse_slurm_time("1-00:00:10") == 86410);
  CHECK(parse_slurm_time("0") == 0);
  CHECK(parse_slurm_time("UNLIMITED") == 0);
  CHECK(parse_slurm_time("infinite") == 0);
}

TEST_CASE("parse_slurm_time rejects malformed times", "[slurm]") {
  for (const char* bad : {"", "abc", "1h", "1:2:3:4", "-5", "1-", "1-2:3:4:5", ":5", "5:", "1.5",
                          "1--2", "1234567890"}) {
    INFO("time '" << bad << "'");
    CHECK_FALSE(parse_slurm_time(bad).has_value());
  }
}

TEST_CASE("signal lead is a quarter of short limits and capped for long ones", "[slurm]") {
  CHECK(signal_lead_seconds(60) == 15);
  CHECK(signal_lead_seconds(4) == 1);
  CHECK(signal_lead_seconds(1) == 1);
  CHECK(signal_lead_seconds(7200) == 120);
}

TEST_CASE("shell_quote round-trips through bash", "[slurm]") {
  Sandbox box;
  for (const std::string text : {"plain", "with space", "it's", "'", "$HOME `x` \"q\" \\ *", ""}) {
    const fs::path p = box.write("quote.sh", "printf %s " + shell_quote(text) + "\n", false);
    const Run r = run_shell("bash " + shell_quote(p.string()));
    INFO("text <" << text << "> quoted " << shell_quote(text));
    CHECK(r.status == 0);
    CHECK(r.output == text);
  }
}

TEST_CASE("default_job_name keeps the config stem", "[slurm]") {
  CHECK(default_job_name("configs/paper/fig3.json") == "attndev-fig3");
  CHECK(default_job_name("/x/my sweep(2).json") == "attndev-my_sweep_2_");
  CHECK(default_job_name("noext") == "attndev-noext");
  CHECK(default_job_name(std::string(100, 'a') + ".json").size() == 64);
}

TEST_CASE("sweep script: array, resources and directives before commands", "[slurm]") {
  SlurmOptions o = base_options();
  SlurmScripts s = make_slurm_scripts(o);
  check_directives_first(s.sweep);
  check_directives_first(s.merge);
  CHECK(has_line(s.sweep, "#SBATCH --array=0-3"));
  CHECK(has_line(s.sweep, "#SBATCH --job-name=attndev-sweep"));
  CHECK(has_line(s.sweep, "#SBATCH --cpus-per-task=1"));
  CHECK(has_line(s.sweep, "#SBATCH --requeue"));
  CHECK(has_line(s.sweep, "#SBATCH --open-mode=append"));
  CHECK(has_line(s.sweep, "#SBATCH --output=/scratch/u/sweep1/slurm/logs/%A_%a.out"));
  CHECK(has_line(s.merge, "#SBATCH --output=/scratch/u/sweep1/slurm/logs/merge_%j.out"));
  CHECK(has_line(s.merge, "#SBATCH --job-name=attndev-sweep-merge"));
  // Nothing asked for, nothing constrained: the cluster's defaults apply.
  CHECK(count_prefix(s.sweep, "#SBATCH --partition") == 0);
  CHECK(count_prefix(s.sweep, "#SBATCH --time") == 0);
  CHECK(count_prefix(s.sweep, "#SBATCH --signal") == 0);
  CHECK(count_prefix(s.sweep, "#SBATCH --gpus") == 0);
  CHECK(count_prefix(s.merge, "#SBATCH --gpus") == 0);

  o.partition = "gpu,gpu-long";
  o.time_limit = "1:00:00";
  o.cpus_per_task = 8;
  o.gpus_per_task = 1;
  o.shards = 1;
  s = make_slurm_scripts(o);
  check_directives_first(s.sweep);
  CHECK(has_line(s.sweep, "#SBATCH --array=0-0"));
  CHECK(has_line(s.sweep, "#SBATCH --partition=gpu,gpu-long"));
  CHECK(has_line(s.sweep, "#SBATCH --time=1:00:00"));
  CHECK(has_line(s.sweep, "#SBATCH --signal=TERM@120"));
  CHECK(has_line(s.sweep, "#SBATCH --cpus-per-task=8"));
  CHECK(has_line(s.sweep, "#SBATCH --gpus-per-task=1"));
  CHECK(has_line(s.merge, "#SBATCH --partition=gpu,gpu-long"));
  CHECK(has_line(s.merge, "#SBATCH --time=1:00:00"));
  CHECK(count_prefix(s.merge, "#SBATCH --gpus") == 0);  // merging needs no GPU

  o.time_limit = "UNLIMITED";
  s = make_slurm_scripts(o);
  CHECK(has_line(s.sweep, "#SBATCH --time=UNLIMITED"));
  CHECK(count_prefix(s.sweep, "#SBATCH --signal") == 0);  // no deadline to warn ahead of
}

TEST_CASE("generated scripts are valid bash", "[slurm]") {
  Sandbox box;
  const SlurmScripts s = make_slurm_scripts(base_options());
  for (const auto& [name, text] :
       {std::pair{"sweep", s.sweep}, {"merge", s.merge}, {"submit", s.submit}}) {
    const fs::path p = box.write(name, text, false);
    const Run r = run_shell("bash -n " + shell_quote(p.string()));
    INFO(name << ":\n" << text << "\n" << r.output);
    CHECK(r.status == 0);
  }
}

TEST_CASE("sweep script runs shard auto/N through srun with the exact runner arguments",
          "[slurm]") {
  Sandbox box;
  SlurmOptions o = base_options();
  o.cpus_per_task = 3;
  o.gpus_per_task = 2;
  const SlurmScripts s = make_slurm_scripts(o);
  const fs::path log = box.dir / "srun.log";
  box.write("bin/srun", recorder(log, "echo OMP=$OMP_NUM_THREADS; exit 75"), true);
  const fs::path sweep = box.write("sweep.sbatch", s.sweep, false);
  const std::string env = "PATH=" + shell_quote((box.dir / "bin").string()) + ":\"$PATH\" ";

  // SLURM_ARRAY_TASK_COUNT is deliberately wrong: a resubmitted subset has a smaller count, and
  // the shard must come from the script's fixed N, not from it.
  const Run ok = run_shell(env + "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=1 bash " +
                           shell_quote(sweep.string()));
  INFO(ok.output);
  CHECK(ok.status == 75);  // the runner's exit code comes back through exec srun
  const std::vector<std::string> expected = {"--ntasks=1",
                                             "--cpus-per-task=3",
                                             "--gpus-per-task=2",
                                             "/opt/attn dev/bin/attndev",
                                             "run",
                                             "/home/u/it's/sweep.json",
                                             "-o",
                                             "/scratch/u/sweep1",
                                             "--shard",
                                             "auto/4",
                                             "---"};
  CHECK(lines_of(read_all(log)) == expected);
  CHECK(ok.output.find("OMP=3\n") != std::string::npos);

  // Outside an array, or with a task id beyond this sweep: refuse before running anything.
  fs::remove(log);
  for (const std::string task : {"", "4", "x"}) {
    const Run bad =
        run_shell(env + "SLURM_ARRAY_TASK_ID=" + task + " bash " + shell_quote(sweep.string()));
    INFO("task '" << task << "': " << bad.output);
    CHECK(bad.status == 2);
    CHECK(bad.output.find("array task 0..3") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(log));
}

TEST_CASE("submit script chains the merge afterany the sweep and passes a resubmit list",
          "[slurm]") {
  Sandbox box;
  const SlurmOptions o = base_options();
  const SlurmScripts s = make_slurm_scripts(o);
  const fs::path log = box.dir / "sbatch.log";
  // The stand-in answers 101 for the array and 102 for the merge, as `sbatch --parsable` would.
  box.write("bin/sbatch",
            recorder(log, "if grep -q dependency " + shell_quote(log.string()) +
                              "; then echo '102;cl'; else echo 101; fi"),
            true);
  const fs::path submit = box.write("submit.sh", s.submit, true);
  const std::string env = "PATH=" + shell_quote((box.dir / "bin").string()) + ":\"$PATH\" ";

  Run r = run_shell(env + "bash " + shell_quote(submit.string()));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output == "sweep_job=101\nmerge_job=102\n");
  std::vector<std::string> expected = {"--parsable",
                                       "/scratch/u/sweep1/slurm/sweep.sbatch",
                                       "---",
                                       "--parsable",
                                       "--dependency=afterany:101",
                                       "/scratch/u/sweep1/slurm/merge.sbatch",
                                       "---"};
  CHECK(lines_of(read_all(log)) == expected);

  fs::remove(log);
  r = run_shell(env + "bash " + shell_quote(submit.string()) + " 1,3");
  CHECK(r.status == 0);
  expected.insert(expected.begin() + 1, "--array=1,3");
  CHECK(lines_of(read_all(log)) == expected);

  fs::remove(log);
  r = run_shell(env + "bash " + shell_quote(submit.string()) + " 1 2");
  CHECK(r.status == 2);
  CHECK_FALSE(fs::exists(log));
}

TEST_CASE("bad options are refused with the option named", "[slurm]") {
  struct Case {
    const char* name;
    void (*mutate)(SlurmOptions&);
    const char* message;
  };
  const Case cases[] = {
      {"zero shards", [](SlurmOptions& o) { o.shards = 0; }, "--shards"},
      {"bad time", [](SlurmOptions& o) { o.time_limit = "2h"; }, "--time"},
      {"bad partition", [](SlurmOptions& o) { o.partition = "a b"; }, "--partition"},
      {"zero cpus", [](SlurmOptions& o) { o.cpus_per_task = 0; }, "--cpus-per-task"},
      {"negative gpus", [](SlurmOptions& o) { o.gpus_per_task = -1; }, "--gpus-per-task"},
      {"relative output", [](SlurmOptions& o) { o.output_dir = "out"; }, "absolute"},
      {"space in output", [](SlurmOptions& o) { o.output_dir = "/a b"; }, "#SBATCH"},
      {"percent in output", [](SlurmOptions& o) { o.output_dir = "/a%j"; }, "#SBATCH"},
      {"relative config", [](SlurmOptions& o) { o.config_path = "c.json"; }, "config"},
      {"newline in config", [](SlurmOptions& o) { o.config_path = "/c\n.json"; }, "newline"},
      {"bad job name", [](SlurmOptions& o) { o.job_name = "a;b"; }, "job name"},
      {"mem with two units", [](SlurmOptions& o) { o.mem = "16GB"; }, "--mem"},
      {"mem without digits", [](SlurmOptions& o) { o.mem = "G"; }, "--mem"},
      {"constraint with a space", [](SlurmOptions& o) { o.constraint = "a b"; }, "--constraint"},
      {"gres with a space", [](SlurmOptions& o) { o.gres = "gpu 1"; }, "--gres"},
      {"short sbatch option", [](SlurmOptions& o) { o.sbatch = {"-A proj"}; }, "--account=proj"},
      {"sbatch without dashes", [](SlurmOptions& o) { o.sbatch = {"account=p"}; }, "--sbatch"},
      {"sbatch with a quote", [](SlurmOptions& o) { o.sbatch = {"--comment='x'"}; }, "quotes"},
      {"sbatch empty", [](SlurmOptions& o) { o.sbatch = {"  "}; }, "--sbatch"},
      {"sbatch owned option", [](SlurmOptions& o) { o.sbatch = {"--array=1-3"}; }, "themselves"},
      {"sbatch owned via flag", [](SlurmOptions& o) { o.sbatch = {"--mem=4G"}; }, "use --mem"},
      {"setup with newline", [](SlurmOptions& o) { o.setup = {"a\nb"}; }, "--setup"},
      {"native build", [](SlurmOptions& o) { o.native_build = true; }, "-DATTNDEV_NATIVE=OFF"},
  };
  for (const Case& c : cases) {
    SlurmOptions o = base_options();
    c.mutate(o);
    INFO(c.name);
    try {
      (void)make_slurm_scripts(o);
      FAIL("no error for " << c.name);
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(c.message) != std::string::npos);
    }
  }
}

TEST_CASE("cluster options: mem, constraint, gres and extra sbatch options in the headers",
          "[slurm]") {
  SlurmOptions o = base_options();
  o.mem = "16G";
  o.constraint = "avx512&ib";
  o.gres = "gpu:a100:1";
  o.sbatch = {"--account=proj7  --qos=normal", "--exclusive"};
  const SlurmScripts s = make_slurm_scripts(o);
  check_directives_first(s.sweep);
  check_directives_first(s.merge);
  for (const std::string& script : {s.sweep, s.merge}) {
    CHECK(has_line(script, "#SBATCH --mem=16G"));
    CHECK(has_line(script, "#SBATCH --constraint=avx512&ib"));
    CHECK(has_line(script, "#SBATCH --account=proj7"));
    CHECK(has_line(script, "#SBATCH --qos=normal"));
    CHECK(has_line(script, "#SBATCH --exclusive"));
  }
  CHECK(has_line(s.sweep, "#SBATCH --gres=gpu:a100:1"));
  CHECK(count_prefix(s.merge, "#SBATCH --gres") == 0);  // merging needs no GPU
}

TEST_CASE("sbatch options: one string holds several, each checked", "[slurm]") {
  CHECK(split_sbatch_options(" --account=a\t--qos=b --exclusive ") ==
        std::vector<std::string>{"--account=a", "--qos=b", "--exclusive"});
  CHECK(split_sbatch_options("--mail-type=END,FAIL") ==
        std::vector<std::string>{"--mail-type=END,FAIL"});
  for (const std::string bad : {"-", "--", "--=x", "--a=", "--1x", "--a#b", "--job-name=x"}) {
    INFO(bad);
    CHECK_THROWS_AS(split_sbatch_options(bad), std::invalid_argument);
  }
}

TEST_CASE("setup lines run before attndev in order, and a failing line stops the job", "[slurm]") {
  Sandbox box;
  SlurmOptions o = base_options();
  // An unset variable in a sourced profile must not trip the script's `set -u`.
  o.setup = {"export ATTNDEV_SETUP_A=\"${NOT_SET_ANYWHERE}one\"", "echo \"setup two\""};
  SlurmScripts s = make_slurm_scripts(o);
  check_directives_first(s.sweep);
  check_directives_first(s.merge);
  const fs::path log = box.dir / "srun.log";
  box.write("bin/srun", recorder(log, "echo \"srun sees $ATTNDEV_SETUP_A\""), true);
  const std::string env = "PATH=" + shell_quote((box.dir / "bin").string()) + ":\"$PATH\" ";
  fs::path sweep = box.write("sweep.sbatch", s.sweep, false);
  Run r = run_shell(env + "SLURM_ARRAY_TASK_ID=1 bash " + shell_quote(sweep.string()));
  INFO(s.sweep << "\n" << r.output);
  CHECK(r.status == 0);
  const auto two = r.output.find("setup two\n");
  const auto seen = r.output.find("srun sees one\n");
  CHECK(two != std::string::npos);
  CHECK(seen != std::string::npos);
  CHECK(two < seen);
  CHECK(s.merge.find("export ATTNDEV_SETUP_A=") < s.merge.find("exec "));

  o.setup = {"echo before", "false", "echo after"};
  s = make_slurm_scripts(o);
  fs::remove(log);
  sweep = box.write("sweep.sbatch", s.sweep, false);
  r = run_shell(env + "SLURM_ARRAY_TASK_ID=1 bash " + shell_quote(sweep.string()));
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK(r.output.find("setup line failed (exit 1): false") != std::string::npos);
  CHECK(r.output.find("after") == std::string::npos);
  CHECK_FALSE(fs::exists(log));  // attndev never started
}

TEST_CASE("a -march=native binary is refused unless allowed, and then warns in every log",
          "[slurm]") {
  SlurmOptions o = base_options();
  CHECK(make_slurm_scripts(o).sweep.find("march=native") == std::string::npos);
  o.native_build = true;
  CHECK_THROWS_AS(make_slurm_scripts(o), std::invalid_argument);
  o.allow_native = true;
  const SlurmScripts s = make_slurm_scripts(o);
  check_directives_first(s.sweep);
  for (const std::string& script : {s.sweep, s.merge}) {
    CHECK(script.find("echo \"WARNING: ") != std::string::npos);
    CHECK(script.find("-DATTNDEV_NATIVE=OFF") != std::string::npos);
  }
}

namespace {

// The sweep script with /proc/cpuinfo replaced by `cpuinfo` (a file the test writes, or none).
std::string with_cpuinfo(std::string script, const std::string& cpuinfo) {
  for (std::size_t at = script.find("/proc/cpuinfo"); at != std::string::npos;
       at = script.find("/proc/cpuinfo", at + cpuinfo.size())) {
    script.replace(at, std::string("/proc/cpuinfo").size(), cpuinfo);
  }
  return script;
}

constexpr const char* kV3Flags =
    "fpu vme sse sse2 ssse3 cx16 sse4_1 sse4_2 movbe popcnt xsave avx f16c lahf_lm abm fma bmi1 "
    "avx2 bmi2";

}  // namespace

// A portable binary (-march=x86-64-v3) needs no --allow-native; its jobs check the node first.
// Run with stand-in /proc/cpuinfo files: all of x86-64-v3's flags (srun runs), two missing (the
// job stops, naming the node and the flags, srun never runs), none readable (a warning, srun runs).
TEST_CASE("a portable binary's jobs check the node's CPU features before attndev starts",
          "[slurm]") {
  Sandbox box;
  SlurmOptions o = base_options();
  o.march = "x86-64-v3";
  const SlurmScripts s = make_slurm_scripts(o);  // no allow_native needed
  check_directives_first(s.sweep);
  check_directives_first(s.merge);
  for (const std::string& script : {s.sweep, s.merge}) {
    CHECK(script.find("for attndev_flag in cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3 avx avx2 bmi1 "
                      "bmi2 f16c fma abm movbe xsave; do") != std::string::npos);
    CHECK(script.find("march=native") == std::string::npos);
    CHECK(script.find("lacks CPU features of -march=x86-64-v3") < script.find("exec "));
  }
  const fs::path log = box.dir / "srun.log";
  box.write("bin/srun", recorder(log, "exit 0"), true);
  const std::string env = "PATH=" + shell_quote((box.dir / "bin").string()) + ":\"$PATH\" ";
  const auto run_with = [&](const std::string& cpuinfo) {
    fs::remove(log);
    const fs::path sweep = box.write("sweep.sbatch", with_cpuinfo(s.sweep, cpuinfo), false);
    return run_shell(env + "SLURM_ARRAY_TASK_ID=0 bash " + shell_quote(sweep.string()));
  };
  const fs::path good = box.write("good",
                                  std::string("processor\t: 0\nflags\t\t: ") + kV3Flags +
                                      "\n\nprocessor\t: 1\nflags\t\t: fpu\n",
                                  false);
  Run r = run_with(good.string());
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(fs::exists(log));
  CHECK(r.output.find("lacks") == std::string::npos);

  // An x86-64-v2 node: no avx2, no fma (and none of v3's other additions but these stay).
  std::string v2 = kV3Flags;
  for (const std::string flag : {" fma", " avx2"}) v2.erase(v2.find(flag), flag.size());
  const fs::path old = box.write("old", "flags\t\t: " + v2 + "\n", false);
  r = run_with(old.string());
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK_FALSE(fs::exists(log));  // attndev never started
  CHECK(r.output.find("sweep.sbatch: node ") != std::string::npos);
  CHECK(r.output.find("lacks CPU features of -march=x86-64-v3, which this attndev was built "
                      "for: avx2 fma.") != std::string::npos);
  CHECK(r.output.find("ATTNDEV_PORTABLE_MARCH=x86-64-v2") != std::string::npos);

  r = run_with((box.dir / "absent").string());
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(fs::exists(log));
  CHECK(r.output.find("WARNING: sweep.sbatch: cannot read the CPU flags") != std::string::npos);
}

TEST_CASE("the ISA check follows the -march: none for x86-64, a warning for an unknown one",
          "[slurm]") {
  CHECK(attndev::experiment::march_cpu_flags("x86-64-v2")->size() == 6);
  CHECK(attndev::experiment::march_cpu_flags("x86-64-v4")->back() == "avx512vl");
  CHECK_FALSE(attndev::experiment::march_cpu_flags("znver3"));
  SlurmOptions o = base_options();
  o.march = "x86-64";
  CHECK(make_slurm_scripts(o).sweep.find("attndev_flag") == std::string::npos);
  o.march = "znver3";
  const SlurmScripts s = make_slurm_scripts(o);
  CHECK(s.sweep.find("attndev_flag") == std::string::npos);
  CHECK(s.sweep.find("echo \"WARNING: sweep.sbatch: attndev built with -march=znver3 runs on") !=
        std::string::npos);
  o.native_build = true;
  o.allow_native = true;
  CHECK_THROWS_AS(make_slurm_scripts(o), std::invalid_argument);  // native and portable at once
}

namespace {

using attndev::experiment::choose_job_binary;
using attndev::experiment::JobBinaryRequest;

constexpr const char* kSelf = "/w/build/release/apps/attndev/attndev";
constexpr const char* kSibling = "/w/build/portable/apps/attndev/attndev";

// A stand-in for running `PATH --version`: the lines of the binaries that "exist".
std::function<std::optional<std::string>(const std::string&)> binaries(
    std::vector<std::pair<std::string, std::string>> lines) {
  return [lines](const std::string& path) -> std::optional<std::string> {
    for (const auto& [p, line] : lines) {
      if (p == path) return line + "\n";
    }
    return std::nullopt;
  };
}

JobBinaryRequest native_request() {
  JobBinaryRequest r;
  r.self = kSelf;
  r.self_isa = "native";
  r.self_version = "attndev 0.1.0 (git abc, GNU 12.2.0, -march=native)";
  return r;
}

std::string refusal_of(const JobBinaryRequest& r,
                       const std::function<std::optional<std::string>(const std::string&)>& f) {
  try {
    (void)choose_job_binary(r, f);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a -march=native binary's jobs run the portable build beside it", "[slurm]") {
  const std::string v3 = "attndev 0.1.0 (git abc, GNU 12.2.0, -march=x86-64-v3)";
  auto chosen = choose_job_binary(native_request(), binaries({{kSibling, v3}}));
  CHECK(chosen.path == kSibling);
  CHECK(chosen.isa == "x86-64-v3");
  CHECK(chosen.note.find("the jobs run the portable build " + std::string(kSibling)) !=
        std::string::npos);

  // --allow-native keeps its meaning: this binary runs the jobs, the sibling unused.
  JobBinaryRequest allowed = native_request();
  allowed.allow_native = true;
  chosen = choose_job_binary(allowed, binaries({{kSibling, v3}}));
  CHECK(chosen.path == kSelf);
  CHECK(chosen.isa == "native");

  // A portable binary runs its own jobs; it looks for nothing.
  JobBinaryRequest portable = native_request();
  portable.self = kSibling;
  portable.self_isa = "x86-64-v3";
  chosen = choose_job_binary(portable, binaries({}));
  CHECK(chosen.path == kSibling);
  CHECK(chosen.note.empty());

  // --attndev names it outright.
  JobBinaryRequest named = native_request();
  named.explicit_path = "/opt/attndev";
  chosen = choose_job_binary(named, binaries({{"/opt/attndev", v3}}));
  CHECK(chosen.path == "/opt/attndev");
  CHECK(chosen.isa == "x86-64-v3");
  CHECK(refusal_of(named, binaries({})).find("--attndev /opt/attndev: no attndev runs there") !=
        std::string::npos);
}

TEST_CASE("without a portable build beside it a -march=native binary is refused with the fix",
          "[slurm]") {
  const std::string none = refusal_of(native_request(), binaries({}));
  CHECK(none.find("-march=native") != std::string::npos);
  CHECK(none.find("(none at " + std::string(kSibling) + ")") != std::string::npos);
  CHECK(none.find("scripts/run.sh builds one in build/portable") != std::string::npos);
  CHECK(none.find("-DATTNDEV_NATIVE=OFF") != std::string::npos);
  CHECK(none.find("--allow-native") != std::string::npos);
  // A native binary in build/portable is no portable build.
  CHECK(refusal_of(native_request(),
                   binaries({{kSibling, "attndev 0.1.0 (git abc, GNU 12.2.0, -march=native)"}})) ==
        none);
  // Another revision would run other code than the one that checked the config.
  const std::string stale =
      refusal_of(native_request(),
                 binaries({{kSibling, "attndev 0.1.0 (git 0ld, GNU 12.2.0, -march=x86-64-v3)"}}));
  CHECK(stale.find("is another build") != std::string::npos);
  CHECK(stale.find("cmake --build build/portable --target attndev") != std::string::npos);
  // A binary older than the target in --version says nothing of its target.
  CHECK(refusal_of(native_request(), binaries({{kSibling, "attndev 0.1.0 (git abc, GNU 12.2.0)"}}))
            .find("is another build") != std::string::npos);
  // Outside a build tree there is nowhere to look.
  JobBinaryRequest installed = native_request();
  installed.self = "/usr/local/bin/attndev";
  CHECK(refusal_of(installed, binaries({})).find("-DATTNDEV_NATIVE=OFF") != std::string::npos);
}

TEST_CASE("portable_sibling and version_line_isa", "[slurm]") {
  using attndev::experiment::portable_sibling;
  using attndev::experiment::version_line_isa;
  CHECK(portable_sibling(kSelf) == kSibling);
  CHECK(portable_sibling("/a/b/build/clang/apps/attndev/attndev") ==
        "/a/b/build/portable/apps/attndev/attndev");
  CHECK(portable_sibling(kSibling).empty());
  CHECK(portable_sibling("/usr/bin/attndev").empty());
  CHECK(portable_sibling("/w/out/release/apps/attndev/attndev").empty());
  CHECK(version_line_isa("attndev 0.1.0 (git abc, GNU 12.2.0, -march=native)\n") == "native");
  CHECK(version_line_isa("attndev 0.1.0 (git abc, Clang 19.1.7, -march=x86-64-v3)") == "x86-64-v3");
  CHECK(version_line_isa("attndev 0.1.0 (git abc, GNU 12.2.0, default -march)") == "default");
  CHECK_FALSE(version_line_isa("attndev 0.1.0 (git abc, GNU 12.2.0)"));
  CHECK_FALSE(version_line_isa("attndev 0.1.0 (git abc, GNU 12.2.0, -march=)"));
}

TEST_CASE("a config's setup key is split off and never reaches the config hash", "[slurm]") {
  const std::string plain = R"({"name": "s", "axes": {"seq_len": [64]},
                               "variants": [{"name": "b", "algorithm": "baseline",
                                             "policy": "kernel-bf16"}]})";
  const std::string with_list =
      R"({"setup": ["module load gcc", "source /v/bin/activate"], "name": "s",
          "axes": {"seq_len": [64]}, "variants": [{"name": "b", "algorithm": "baseline", "policy": "kernel-bf16"}]})";
  const auto split = split_setup_key(with_list);
  CHECK(split.had_key);
  CHECK(split.setup == std::vector<std::string>{"module load gcc", "source /v/bin/activate"});
  CHECK(split.config.find("setup") == std::string::npos);
  CHECK(attndev::experiment::parse_config(split.config).hash ==
        attndev::experiment::parse_config(plain).hash);

  const auto one = split_setup_key(R"({"name": "s", "setup": "module load x"})");
  CHECK(one.setup == std::vector<std::string>{"module load x"});

  // No key, or text the config parser must explain itself: passed through untouched.
  for (const std::string& text : {plain, std::string("{not json"), std::string("[1]")}) {
    const auto same = split_setup_key(text);
    CHECK_FALSE(same.had_key);
    CHECK(same.setup.empty());
    CHECK(same.config == text);
  }
  for (const std::string bad : {R"({"setup": 3})", R"({"setup": ["a", 1]})"}) {
    INFO(bad);
    CHECK_THROWS_AS(split_setup_key(bad), std::invalid_argument);
  }
}
