// One function per subcommand; each adds itself to the command line (cli.hpp) and sets its
// callback.
// main.cpp calls them all explicitly (a registry with one call site, docs/CONTRIBUTING.md #11).
//
// A callback reports its exit code by throwing CommandExit (so that RAII cleanup runs) or by
// returning normally (exit 0). Usage errors throw UsageError (exit 2).
#pragma once

#include <stdexcept>
#include <string>

namespace attndev::app::cli {
class Command;
}

namespace attndev::app {

struct CommandExit {
  int code;
};

// Bad input from the user: printed as "attndev <cmd>: error: <what>" and exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void add_list_command(cli::Command& app);
void add_point_command(cli::Command& app);
void add_bench_command(cli::Command& app);
void add_run_command(cli::Command& app);
void add_validate_command(cli::Command& app);
void add_plan_command(cli::Command& app);
void add_report_command(cli::Command& app);
void add_compare_command(cli::Command& app);
void add_merge_command(cli::Command& app);
void add_slurm_command(cli::Command& app);
void add_train_command(cli::Command& app);
void add_wdist_command(cli::Command& app);
void add_match_command(cli::Command& app);
void add_plot_command(cli::Command& app);
void add_gemm_command(cli::Command& app);

}  // namespace attndev::app
