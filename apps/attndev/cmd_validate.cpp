// `attndev validate CONFIG [-a AXIS=VALUES]... [--json]`: check a config without running or
// writing anything. Exit 0 when it is valid (warnings go to stderr), 2 with the JSON path of the
// first problem otherwise.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment_cli.hpp"

namespace attndev::app {

void add_validate_command(cli::Command& app) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cli::Command* cmd = app.add_subcommand(
      "validate", "Check an experiment config (nothing runs, nothing is written)");
  cmd->add_option("config", args->config, "Experiment config (JSON)")->required();
  cmd->add_option("-a,--axis", args->overrides,
                  "Override an axis: -a seq_len=[512,1024] (repeatable)");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the line");
  cmd->callback([args] {
    const LoadedConfig loaded = load_config_or_usage(args->config, args->overrides);
    experiment::Plan plan;
    try {
      plan = experiment::make_plan(loaded.config);
    } catch (const experiment::ConfigError& e) {
      throw UsageError(args->config + ": " + e.what());
    }
    const std::vector<std::string> warnings = experiment::config_warnings(loaded.config);
    print_config_warnings(args->config, warnings);
    if (args->json) {
      const nlohmann::json out = {{"config", args->config},
                                  {"valid", true},
                                  {"name", loaded.config.name},
                                  {"hash", loaded.config.hash},
                                  {"points", plan.points.size()},
                                  {"variants", loaded.config.variants.size()},
                                  {"skipped_combinations", plan.skipped.size()},
                                  {"warnings", warnings}};
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf(
        "%s: ok: \"%s\", %zu points x %zu variants (%zu axis combinations skipped), config hash "
        "%s\n",
        args->config.c_str(), loaded.config.name.c_str(), plan.points.size(),
        loaded.config.variants.size(), plan.skipped.size(), loaded.config.hash.c_str());
  });
}

}  // namespace attndev::app
