// `attndev plan CONFIG [-a ...] [--shard i/N] [--max-points K] [--no-estimate]`: what a run
// would do: points, variants, points skipped by constraints (with the reason), FLOPs, and a
// time estimate from a short calibration of each variant on this machine.

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "experiment/spec/inputs.hpp"
#include "experiment/spec/memory.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/run/progress.hpp"
#include "experiment/run/variant_runner.hpp"
#include "experiment_cli.hpp"
#include "io/memory.hpp"

namespace attndev::app {

namespace {

// Seconds per FLOP of one algorithm/policy on this machine, from one small problem. The emulator's
// cost is close to linear in FLOPs at a fixed policy, which is what the estimate assumes.
double seconds_per_flop(attention::Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                        int threads) {
  attention::Shape shape{1, 1, 256, 256, 64};
  const attention::Inputs inputs =
      experiment::make_inputs(shape, experiment::Distribution{}, /*seed=*/0, policy.input);
  attention::Options options;
  options.threads = threads;
  const auto start = std::chrono::steady_clock::now();
  attention::run(algorithm, policy, inputs, options);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s / attention::forward_flops(shape, /*causal=*/false);
}

}  // namespace

void add_plan_command(cli::Command& app) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
    std::string shard;
    std::size_t max_points = 40;
    bool no_estimate = false;
    int threads = 0;
  };
  auto args = std::make_shared<Args>();
  cli::Command* cmd = app.add_subcommand(
      "plan", "Show the points, variants, skipped points, FLOPs and estimated time of a config");
  cmd->add_option("config", args->config, "Experiment config (JSON)")->required();
  cmd->add_option("-a,--axis", args->overrides,
                  "Override an axis: -a seq_len=[512,1024] (repeatable)");
  cmd->add_option("--shard", args->shard,
                  "Only the points of shard i/N (or auto, auto/N under SLURM)");
  cmd->add_option("--max-points", args->max_points, "Points listed (the totals always cover all)");
  cmd->add_flag("--no-estimate", args->no_estimate,
                "Skip the calibration run behind the time estimate");
  cmd->add_option("-j,--threads", args->threads, "Threads the estimate assumes (0: all)");
  cmd->callback([args] {
    const LoadedConfig loaded = load_config_or_usage(args->config, args->overrides);
    const experiment::Config& config = loaded.config;
    const ShardSpec shard = parse_shard(args->shard);
    experiment::Plan plan;
    try {
      plan = experiment::make_plan(config);
    } catch (const experiment::ConfigError& e) {
      throw UsageError(args->config + ": " + e.what());
    }
    std::vector<const experiment::Point*> points;
    for (const experiment::Point& p : plan.points)
      if (experiment::shard_of(p, shard.count) == shard.index) points.push_back(&p);

    std::printf("config \"%s\" (hash %s)%s%s\n", config.name.c_str(), config.hash.c_str(),
                config.description.empty() ? "" : ": ", config.description.c_str());
    std::printf("\nvariants (%zu):\n", config.variants.size());
    Table variants({"name", "algorithm", "policy", "backend", "baseline", "ratio_to", "reference"});
    for (std::size_t v = 0; v < config.variants.size(); ++v) {
      const experiment::Variant& x = config.variants[v];
      const int ref = config.ratio_reference(v);
      const int out_ref = config.output_reference(v);
      variants.add_row(
          {x.name, experiment::variant_algorithm_name(x), x.policy_label,
           experiment::backend_name(x.backend), x.baseline ? "yes" : "",
           ref >= 0 && static_cast<std::size_t>(ref) != v
               ? config.variants[static_cast<std::size_t>(ref)].name
               : "",
           out_ref >= 0 ? config.variants[static_cast<std::size_t>(out_ref)].name : ""});
    }
    variants.print(stdout, /*left_align_all=*/true);

    std::printf("\npoints: %zu%s (%zu trial(s) x %zu axis combinations)\n", points.size(),
                shard.count > 1
                    ? (" in shard " + std::to_string(shard.index) + "/" +
                       std::to_string(shard.count) + " of " + std::to_string(plan.points.size()))
                          .c_str()
                    : "",
                config.seeds.size(), plan.points.size() / config.seeds.size());
    std::vector<std::string> header = {"#", "id"};
    for (const std::string& a : plan.varying_axes) header.push_back(a);
    header.push_back("seed");
    Table table(header);
    for (std::size_t i = 0; i < points.size() && i < args->max_points; ++i) {
      const experiment::Point& p = *points[i];
      std::vector<std::string> row = {std::to_string(p.index), p.id};
      for (const std::string& a : plan.varying_axes) row.push_back(p.axes.text(a));
      row.push_back(std::to_string(p.seed));
      table.add_row(row);
    }
    table.print(stdout);
    if (points.size() > args->max_points)
      std::printf("... %zu more (--max-points)\n", points.size() - args->max_points);

    if (!plan.skipped.empty()) {
      std::printf("\nskipped axis combinations (%zu):\n", plan.skipped.size());
      std::vector<std::string> sh;
      for (const std::string& a : plan.varying_axes) sh.push_back(a);
      sh.push_back("reason");
      Table skipped(sh);
      for (std::size_t i = 0; i < plan.skipped.size() && i < args->max_points; ++i) {
        std::vector<std::string> row;
        for (const std::string& a : plan.varying_axes) row.push_back(plan.skipped[i].axes.text(a));
        row.push_back(plan.skipped[i].reason);
        skipped.add_row(row);
      }
      skipped.print(stdout, /*left_align_all=*/true);
    }

    // Work: every variant at every point, except tile-independent ones once per input set; plus
    // the fp64 golden once per input set and input format.
    double variant_flops = 0, golden_flops = 0;
    std::map<std::size_t, double> flops_by_variant;
    std::set<std::string> input_sets;
    std::set<std::pair<std::string, int>> goldens;
    std::set<std::pair<std::string, std::size_t>> shared;
    for (const experiment::Point* p : points) {
      const double f = experiment::point_flops(*p);
      input_sets.insert(p->input_key);
      for (std::size_t v = 0; v < config.variants.size(); ++v) {
        const experiment::Variant& x = config.variants[v];
        if (goldens.insert({p->input_key, static_cast<int>(x.policy.input)}).second)
          golden_flops += f;
        if (experiment::tile_independent(x) && !shared.insert({p->input_key, v}).second) continue;
        variant_flops += f;
        flops_by_variant[v] += f;
      }
    }
    std::printf("\nwork: %.3g GFLOP in variants, %.3g GFLOP in fp64 goldens (%zu input sets)\n",
                variant_flops / 1e9, golden_flops / 1e9, input_sets.size());
    const experiment::PlanPeak peak =
        experiment::plan_peak_bytes(config, plan, args->threads, shard.index, shard.count);
    const std::optional<std::uint64_t> available = io::available_memory_bytes();
    if (peak.point)
      std::printf("peak memory: %s at point %zu (%s); %s available%s\n",
                  io::format_bytes(peak.bytes).c_str(), peak.point->index,
                  peak.point->describe().c_str(),
                  available ? io::format_bytes(*available).c_str() : "unknown",
                  available && peak.bytes > *available ? ": `attndev run` would refuse it" : "");
    if (args->no_estimate) return;
    double seconds = golden_flops * seconds_per_flop(attention::Algorithm::baseline,
                                                     numerics::kGoldenPolicy, args->threads);
    for (const auto& [v, f] : flops_by_variant) {
      const experiment::Variant& x = config.variants[v];
      if (x.backend != experiment::Backend::cpu) continue;
      seconds += f * seconds_per_flop(x.algorithm, x.policy, args->threads);
    }
    std::printf(
        "estimated time: %s on this machine (calibrated on one 256x256x64 problem per variant; "
        "cuda and external variants not counted)\n",
        experiment::format_duration(seconds).c_str());
  });
}

}  // namespace attndev::app
