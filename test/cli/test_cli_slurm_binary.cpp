// Which binary `attndev slurm`'s jobs run, end to end: the target `--version` names, and a copy of
// this build's binary at <tmp>/build/release/apps/attndev/attndev (where scripts/run.sh puts the
// native one) with and without a stand-in portable build at <tmp>/build/portable/... beside it.
// The stand-in is a shell script that prints this build's `--version` line with a portable target:
// `attndev slurm` only asks a candidate for that line, and the jobs are never run here.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/spawn.hpp"
#include "files.hpp"

namespace {

namespace fs = std::filesystem;
using attndev::test::Result;
using attndev::test::run_cli;
using attndev::test::slurp;
using attndev::test::work_dir;
using attndev::test::write_config;
using attndev::test::write_text;

std::string slurm_bin_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `binary args...` run through the shell in work_dir(), SLURM_* variables of this process unset.
Result slurm_bin_run(const fs::path& binary, const std::vector<std::string>& args) {
  static int counter = 0;
  const fs::path out = work_dir() / ("bin_out." + std::to_string(++counter));
  const fs::path err = work_dir() / ("bin_err." + std::to_string(counter));
  std::string command = "cd " + slurm_bin_quote(work_dir().string()) +
                        " && unset $(env | sed -n 's/^\\(SLURM_[A-Za-z0-9_]*\\)=.*/\\1/p'); " +
                        slurm_bin_quote(binary.string());
  for (const std::string& a : args) command += " " + slurm_bin_quote(a);
  command += " >" + slurm_bin_quote(out.string()) + " 2>" + slurm_bin_quote(err.string());
  const int raw = std::system(command.c_str());
  Result r;
  r.code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string slurm_bin_first_line(std::string text) {
  return text.substr(0, text.find('\n'));
}

fs::path slurm_bin_config() {
  return write_config("slurm_binary", R"({"name": "slurm-binary", "axes": {"seq_len": [64, 128]},
    "variants": [{"name": "b", "algorithm": "baseline", "policy": "kernel-bf16"}]})");
}

}  // namespace

TEST_CASE("attndev --version names what the binary was compiled for", "[cli]") {
  const Result r = run_cli({"--version"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const std::string line = slurm_bin_first_line(r.out);
  const bool march = line.find(", -march=") != std::string::npos && line.back() == ')';
  const bool plain = line.size() > 16 && line.substr(line.size() - 16) == ", default -march)";
  CHECK((march || plain));
}

TEST_CASE("attndev slurm: jobs of a -march=native binary run the portable build beside it",
          "[cli]") {
  const Result version = run_cli({"--version"});
  REQUIRE(version.code == 0);
  const std::string line = slurm_bin_first_line(version.out);
  const fs::path config = slurm_bin_config();
  const std::string kNative = ", -march=native)";
  if (line.size() < kNative.size() || line.substr(line.size() - kNative.size()) != kNative) {
    // A portable build (the clang preset's): its own jobs, no --allow-native, the ISA checked.
    const fs::path out = work_dir() / "portable_self";
    const Result r = run_cli({"slurm", config.string(), "--shards", "2", "-o", out.string()});
    INFO(line << "\n" << r.err);
    REQUIRE(r.code == 0);
    const std::string sweep = slurp(out / "slurm" / "sweep.sbatch");
    CHECK(sweep.find("march=native") == std::string::npos);
    if (line.find("-march=x86-64-v") != std::string::npos) {
      CHECK(sweep.find("attndev_flag") != std::string::npos);
    }
    return;
  }
  // A copy of this native binary where scripts/run.sh puts it (its own path decides the sibling).
  const fs::path tree = work_dir() / "tree";
  const fs::path native = tree / "build/release/apps/attndev/attndev";
  const fs::path portable = tree / "build/portable/apps/attndev/attndev";
  fs::create_directories(native.parent_path());
  fs::copy_file(ATTNDEV_BINARY_DIR + "/apps/attndev/attndev", native,
                fs::copy_options::overwrite_existing);
  fs::permissions(native, fs::perms::owner_all, fs::perm_options::add);

  // Without it: refused (exit 2), the message says where it looked and how to get one.
  const Result refused = slurm_bin_run(
      native, {"slurm", config.string(), "--shards", "2", "-o", (work_dir() / "none").string()});
  INFO(refused.err);
  CHECK(refused.code == 2);
  CHECK(refused.err.find("(none at " + portable.string() + ")") != std::string::npos);
  CHECK(refused.err.find("scripts/run.sh builds one in build/portable") != std::string::npos);
  CHECK_FALSE(fs::exists(work_dir() / "none" / "slurm"));

  // With it: used by the jobs, said in one line; no --allow-native needed.
  fs::create_directories(portable.parent_path());
  const std::string portable_line =
      line.substr(0, line.size() - kNative.size()) + ", -march=x86-64-v3)";
  write_text(portable, "#!/bin/sh\necho " + slurm_bin_quote(portable_line) + "\n");
  fs::permissions(portable, fs::perms::owner_all, fs::perm_options::add);
  const fs::path out = work_dir() / "with_portable";
  const Result used =
      slurm_bin_run(native, {"slurm", config.string(), "--shards", "2", "-o", out.string()});
  INFO(used.err);
  REQUIRE(used.code == 0);
  CHECK(used.err.find("the jobs run the portable build " + portable.string()) != std::string::npos);
  for (const char* script : {"sweep.sbatch", "merge.sbatch"}) {
    const std::string text = slurp(out / "slurm" / script);
    INFO(script << "\n" << text);
    CHECK(text.find(slurm_bin_quote(portable.string())) != std::string::npos);
    CHECK(text.find(slurm_bin_quote(native.string())) == std::string::npos);
    CHECK(text.find("lacks CPU features of -march=x86-64-v3") != std::string::npos);
    CHECK(text.find("march=native") == std::string::npos);
  }

  // --allow-native keeps its meaning: the native binary runs the jobs, with its warning.
  const fs::path allowed = work_dir() / "allowed";
  const Result kept = slurm_bin_run(native, {"slurm", config.string(), "--shards", "2", "-o",
                                             allowed.string(), "--allow-native"});
  INFO(kept.err);
  REQUIRE(kept.code == 0);
  const std::string sweep = slurp(allowed / "slurm" / "sweep.sbatch");
  CHECK(sweep.find(slurm_bin_quote(native.string())) != std::string::npos);
  CHECK(sweep.find("WARNING: attndev was built with -march=native") != std::string::npos);
  fs::remove_all(tree);
}
