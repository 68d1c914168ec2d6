// attndev: measures the numeric deviation of attention kernels from an FP64 golden.
#include <CLI/CLI.hpp>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "config/suggest.hpp"
#include "exit_codes.hpp"
#include "io/memory.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  using namespace attndev::app;
  // Logs and progress go to stderr so that stdout carries only results (tables, --json).
  spdlog::set_default_logger(spdlog::stderr_color_mt("attndev"));
  spdlog::set_pattern("[%H:%M:%S %^%l%$] %v");
  spdlog::set_level(spdlog::level::info);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug etc.

  CLI::App app{"attndev: numeric deviation of attention kernels (Flash vs baseline vs FP64)",
               "attndev"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("attndev ") + version_string() + " (git " +
                                        git_revision() + ", " + compiler_string() + ")");
  int verbosity = 0;
  app.add_flag("-v,--verbose", verbosity, "More log output (repeat for trace)");
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors");
  app.parse_complete_callback([&] {
    if (quiet) spdlog::set_level(spdlog::level::warn);
    if (verbosity == 1) spdlog::set_level(spdlog::level::debug);
    if (verbosity >= 2) spdlog::set_level(spdlog::level::trace);
  });

  add_list_command(app);
  add_point_command(app);
  add_bench_command(app);
  add_run_command(app);
  add_validate_command(app);
  add_plan_command(app);
  add_report_command(app);
  add_compare_command(app);
  add_merge_command(app);
  add_slurm_command(app);
  add_train_command(app);
  add_wdist_command(app);
  add_match_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // With require_subcommand(1) an unknown command word surfaces as "subcommand required";
    // name the word and the nearest command instead.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      std::vector<std::string> names;
      const CLI::App& const_app = app;
      for (const CLI::App* sub : const_app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
      const std::vector<std::string_view> views(names.begin(), names.end());
      std::fprintf(stderr, "attndev: error: unknown command '%s'%s\ncommands: %s\n", argv[1],
                   attndev::config::did_you_mean(argv[1], views).c_str(),
                   attndev::config::join_names(views).c_str());
      return kExitUsage;
    }
    app.exit(e);
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage hint
    return kExitUsage;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "attndev: error: %s\n", e.what());
    return kExitUsage;
  } catch (const CommandExit& e) {
    return e.code;
  } catch (const attndev::io::MemoryError& e) {
    // Work that cannot fit in memory, found before allocating it: the input asks too much.
    std::fprintf(stderr, "attndev: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attndev: failed: %s\n", e.what());
    return kExitFailure;
  }
  return kExitOk;
}
