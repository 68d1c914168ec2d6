// `attndev attribute [CONFIG] [--algo A --policy P] [--reference R] [--reference-policy P]
//                    [--n LIST] [--trials T] [--metric M] [-o DIR] [--no-draw] [--print-config]`
//
// "Which stage causes the deviation?" as a command: the config of experiment/attribution.hpp
// (the policy as it is, each stage alone in its format, each stage raised to fp32, coupled stages
// together; the algorithm and its reference over N and trials), run as `attndev run` runs it
// (resumable in DIR), then the attribution table (experiment/results/attribution_table.hpp)
// printed and written as DIR/attribution.md and .csv, and drawn as DIR/attribution.png.
// A CONFIG with `"stage"` variants (configs/analysis/attribution.json) runs instead of flags.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/attribution.hpp"
#include "experiment/results/attribution_table.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment_cli.hpp"
#include "figure_script.hpp"
#include "io/atomic_file.hpp"
#include "io/log.hpp"

namespace attndev::app {
namespace {

namespace fs = std::filesystem;

struct AttributeArgs {
  std::string config;
  std::string algo = "flash2";
  std::string policy = "kernel-bf16";
  std::string reference = "baseline";
  std::string reference_policy;
  std::vector<int> seq_len = {256, 1024};
  int head_dim = 64, block_r = 64, block_c = 64, heads = 1, batch = 1;
  std::string dist = "normal(0,1)";
  bool causal = false;
  int trials = 3;
  unsigned long seed = 0;
  std::string metric = "max_abs";
  std::vector<std::string> overrides;
  std::string out;
  std::string format = "png";
  int threads = 0;
  bool force = false;
  bool no_draw = false;
  bool print_config = false;
};

// A preset name as a JSON string, an object as parsed (parse_policy_arg has checked it).
nlohmann::json policy_value(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first != std::string::npos && text[first] == '{') return nlohmann::json::parse(text);
  return text;
}

// The config attribute runs: CONFIG as given, or the one built from the flags.
LoadedConfig attribute_config(const AttributeArgs& a, const std::vector<std::string>& flags_given) {
  if (!a.config.empty()) {
    if (!flags_given.empty())
      throw UsageError(flags_given.front() + " with a CONFIG: the config says what to run; " +
                       "drop " + flags_given.front() + " or drop the config");
    LoadedConfig loaded = load_config_or_usage(a.config, a.overrides);
    if (!experiment::has_stage_variants(loaded.config))
      throw UsageError(a.config +
                       ": no variant has a \"stage\" key, so there is nothing to attribute; "
                       "`attndev attribute --algo A --policy P --print-config` writes such a "
                       "config (docs/attribution.md)");
    return loaded;
  }
  experiment::AttributionRequest r;
  r.algorithm = parse_algorithm_arg(a.algo, "--algo");
  if (attention::is_fp8_algorithm(r.algorithm))
    throw UsageError("--algo " + a.algo +
                     ": the fp8 algorithms quantize their inputs themselves, so their stages "
                     "cannot be moved one at a time; attribute baseline, flash1 or flash2");
  r.parsed_policy = parse_policy_arg(a.policy, "--policy");
  r.policy = policy_value(a.policy);
  parse_algorithm_arg(a.reference, "--reference");
  r.reference_algorithm = a.reference;
  if (!a.reference_policy.empty()) {
    parse_policy_arg(a.reference_policy, "--reference-policy");
    r.reference_policy = policy_value(a.reference_policy);
  }
  parse_distribution_arg(a.dist, "--dist");
  for (int n : a.seq_len) require_at_least(n, 1, "--seq-len");
  for (const auto& [value, flag] : {std::pair{a.head_dim, "--head-dim"},
                                    {a.block_r, "--block-r"},
                                    {a.block_c, "--block-c"},
                                    {a.heads, "--heads"},
                                    {a.batch, "--batch"}})
    require_at_least(value, 1, flag);
  r.axes = {{"seq_len", a.seq_len},   {"head_dim", a.head_dim}, {"block_r", a.block_r},
            {"block_c", a.block_c},   {"heads", a.heads},       {"batch", a.batch},
            {"distribution", a.dist}, {"causal", a.causal}};
  r.trials = {{"count", a.trials}, {"seed", a.seed}};
  r.metric = a.metric;
  nlohmann::ordered_json cfg;
  try {
    cfg = experiment::attribution_config(r);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--reference: ") + e.what() + " (--reference-policy)");
  }
  LoadedConfig loaded;
  loaded.text = cfg.dump(2) + "\n";
  try {
    loaded.config = experiment::parse_config(loaded.text, a.overrides);
  } catch (const experiment::ConfigError& e) {
    throw UsageError("the flags make a config that does not parse: " +
                     (e.path().empty() ? "" : e.path() + ": ") + e.message());
  }
  return loaded;
}

void write_outputs(const AttributeArgs& a, const experiment::Config& config, const fs::path& dir) {
  const experiment::Plan plan = experiment::make_plan(config);
  const experiment::StoredResults stored = experiment::load_results(dir, config, plan);
  const experiment::Attribution attribution =
      experiment::make_attribution(config, stored.rows, a.metric);
  const std::string md =
      "# " + config.name + "\n\n" + experiment::attribution_markdown(attribution);
  io::write_file_atomic(dir / "attribution.md", md);
  io::write_file_atomic(dir / "attribution.csv", experiment::attribution_csv(attribution));
  std::fputs(md.c_str(), stdout);
  std::fflush(stdout);
  log::info("wrote {} and {}", (dir / "attribution.md").string(),
            (dir / "attribution.csv").string());
  if (a.no_draw) return;
  const fs::path figure = dir / ("attribution." + a.format);
  draw_figure("draw_attribution.py", {(dir / "attribution.csv").string(), "--metric", a.metric},
              figure, dir / "attribution.csv");
  std::fprintf(stderr, "wrote %s\n", figure.c_str());
}

void run_attribute(const AttributeArgs& a, const std::vector<std::string>& flags_given) {
  if (std::find(std::begin(experiment::kRatioMetrics), std::end(experiment::kRatioMetrics),
                a.metric) == std::end(experiment::kRatioMetrics))
    throw UsageError("--metric " + a.metric + ": expected one of " +
                     config::join_names(experiment::kRatioMetrics) +
                     config::did_you_mean(a.metric, experiment::kRatioMetrics));
  if (a.format != "png" && a.format != "svg" && a.format != "pdf")
    throw UsageError("--format " + a.format + ": expected png, svg or pdf");
  const LoadedConfig loaded = attribute_config(a, flags_given);
  if (a.print_config) {
    std::fputs(loaded.text.c_str(), stdout);
    return;
  }
  const std::string out =
      a.out.empty() ? (fs::path("results") / loaded.config.name).string() : a.out;
  const std::string label = a.config.empty() ? "the attribute config" : a.config;
  const experiment::RunReport report = run_loaded_config(loaded, label, out, a.threads, a.force);
  write_outputs(a, loaded.config, out);
  if (report.rows_failed) {
    log::error("{} rows failed (the table says where); rerun the same command to retry them",
               report.rows_failed);
    throw CommandExit{kExitFailure};
  }
}

}  // namespace

void add_attribute_command(cli::Command& app) {
  auto args = std::make_shared<AttributeArgs>();
  auto given = std::make_shared<std::vector<cli::Option*>>();
  auto names = std::make_shared<std::vector<std::string>>();
  cli::Command* cmd = app.add_subcommand(
      "attribute",
      "Which stage causes the deviation: an algorithm under a policy with each stage alone in "
      "its format (the rest fp64) and each stage raised to fp32 (leave-one-out), against a "
      "reference, over N and trials: one table and a figure");
  cmd->add_option("config", args->config,
                  "A config with \"stage\" variants (configs/analysis/attribution.json) instead "
                  "of --algo/--policy");
  const auto flag = [&](cli::Option* o, const std::string& name) {
    given->push_back(o);
    names->push_back(name);
    return o;
  };
  flag(cmd->add_option("--algorithm,--algo", args->algo,
                       "Algorithm whose deviation is attributed: baseline, flash1, flash2 "
                       "(default flash2)"),
       "--algo");
  flag(cmd->add_option("--policy", args->policy,
                       "Its precision policy: a preset name or a JSON object (default "
                       "kernel-bf16)"),
       "--policy");
  flag(cmd->add_option("--reference", args->reference,
                       "Algorithm each row divides by (default baseline), under each row's "
                       "policy unless --reference-policy fixes it"),
       "--reference");
  flag(cmd->add_option("--reference-policy", args->reference_policy,
                       "A fixed policy for the reference (e.g. torch-math-bf16), the same in "
                       "every row"),
       "--reference-policy");
  flag(cmd->add_option("--seq-len,--n", args->seq_len,
                       "Sequence lengths, comma-separated (default 256,1024; each 4x longer N "
                       "takes about 16x the time of the one before)")
           ->delimiter(','),
       "--n");
  flag(cmd->add_option("--head-dim,--d", args->head_dim, "Head dimension (default 64)"), "--d");
  flag(cmd->add_option("--block-r,--br", args->block_r, "Rows of Q per tile (default 64)"), "--br");
  flag(cmd->add_option("--block-c,--bc", args->block_c, "Rows of K/V per tile (default 64)"),
       "--bc");
  flag(cmd->add_option("--heads", args->heads, "Heads (default 1)"), "--heads");
  flag(cmd->add_option("--batch", args->batch, "Batch size (default 1)"), "--batch");
  flag(cmd->add_option("--distribution,--dist", args->dist,
                       "Input distribution (default normal(0,1))"),
       "--dist");
  flag(cmd->add_flag("--causal", args->causal, "Causal mask"), "--causal");
  flag(cmd->add_option("--trials", args->trials, "Trials (seeds) per point (default 3)")
           ->check(cli::Range(1, 1000)),
       "--trials");
  flag(cmd->add_option("--seed", args->seed, "First seed (default 0)")->unsigned_decimal(),
       "--seed");
  cmd->add_option("--metric", args->metric,
                  "Deviation in the table and figure: max_abs (default), mean_abs, std_abs, "
                  "rmse, rel_l2, max_rel");
  cmd->add_option("-a,--axis", args->overrides,
                  "Override an axis of the config: -a head_dim=128 (repeatable)");
  cmd->add_option("-o,--out", args->out,
                  "Output folder (default results/<config name>); rerunning resumes")
      ->non_empty();
  cmd->add_option("--format", args->format, "Figure format: png (default), svg or pdf");
  cmd->add_option("-j,--threads", args->threads,
                  "Threads per attention call (0: all hardware threads)");
  cmd->add_flag("--force", args->force,
                "Delete results of a different config in the output folder");
  cmd->add_flag("--no-draw", args->no_draw, "The table only: no figure, no Python");
  cmd->add_flag("--print-config", args->print_config,
                "Print the config this would run (JSON) and stop");
  cmd->callback([args, given, names] {
    std::vector<std::string> flags_given;
    for (std::size_t i = 0; i < given->size(); ++i)
      if ((*given)[i]->count() > 0) flags_given.push_back((*names)[i]);
    run_attribute(*args, flags_given);
  });
}

}  // namespace attndev::app
