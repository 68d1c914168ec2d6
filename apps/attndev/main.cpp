// attndev: measures the numeric deviation of attention kernels from an FP64 golden.
#include <cstdio>
#include <exception>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/log.hpp"
#include "io/memory.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  using namespace attndev::app;
  // Logs and progress go to stderr so that stdout carries only results (tables, --json).
  attndev::log::init_cli_logger();  // SPDLOG_LEVEL=debug etc.

  int verbosity = 0;
  bool quiet = false;
  const cli::AppInfo info{
      "attndev", "attndev: numeric deviation of attention kernels (Flash vs baseline vs FP64)",
      version_line()};
  // cli::run maps the command line's own outcomes (--help, --version, bad flags, an unknown
  // command); what a command's callback throws comes out here.
  try {
    return cli::run(argc, argv, info, [&](cli::Command& app) {
      app.add_flag("-v,--verbose", verbosity, "More log output (repeat for trace)");
      app.add_flag("-q,--quiet", quiet, "Only warnings and errors");
      app.parse_complete_callback([&] {
        namespace log = attndev::log;
        if (quiet) log::set_level(log::Level::warn);
        if (verbosity == 1) log::set_level(log::Level::debug);
        if (verbosity >= 2) log::set_level(log::Level::trace);
        // A bad limit is said before any work starts (not when the first estimate reads it).
        (void)attndev::io::memory_limit_from_env();
      });
      add_list_command(app);
      add_point_command(app);
      add_bench_command(app);
      add_run_command(app);
      add_check_command(app);
      add_validate_command(app);
      add_plan_command(app);
      add_report_command(app);
      add_plot_command(app);
      add_attribute_command(app);
      add_compare_command(app);
      add_merge_command(app);
      add_slurm_command(app);
      add_train_command(app);
      add_wdist_command(app);
      add_match_command(app);
      add_gemm_command(app);
    });
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
}
