// `attndev plan CONFIG [-a ...] [--shard i/N] [--max-points K] [--no-estimate]`: what a run
// would do: points, variants, points skipped by constraints (with the reason), FLOPs, and a
// time estimate from a short calibration of each variant on this machine.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
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

// CPU seconds this process has used: what a calibration costs whatever else the machine runs
// (wall time doubled or quintupled under load: a run that took 48 s was estimated at 3:29, then
// at 16:47 an hour later).
double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// CPU seconds per FLOP of one algorithm/policy on this machine: one small problem on one thread,
// the fastest of three runs (the first also pays for page faults). The emulator's cost is close to
// linear in FLOPs at a fixed policy, which is what the estimate assumes.
double seconds_per_flop(attention::Algorithm algorithm, const numerics::PrecisionPolicy& policy) {
  attention::Shape shape{1, 1, 256, 256, 64};
  const attention::Inputs inputs =
      experiment::make_inputs(shape, experiment::Distribution{}, /*seed=*/0, policy.input);
  attention::Options options;
  options.threads = 1;
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const double start = process_cpu_seconds();
    attention::run(algorithm, policy, inputs, options);
    const double s = process_cpu_seconds() - start;
    best = i == 0 ? s : std::min(best, s);
  }
  return best / attention::forward_flops(shape, /*causal=*/false);
}

// The threads a run would use: -j, or every hardware thread.
double run_threads(int threads) {
  return threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

struct PlanArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string shard;
  std::size_t max_points = 40;
  bool no_estimate = false;
  int threads = 0;
  bool json = false;
};

// What `plan` reports, computed once and printed as a table or as JSON.
struct PlanView {
  experiment::Config config;
  experiment::Plan plan;
  ShardSpec shard;
  std::vector<const experiment::Point*> points;  // this shard's
  std::vector<std::string> warnings;
  double variant_flops = 0, golden_flops = 0;
  std::size_t input_sets = 0;
  std::map<std::size_t, double> flops_by_variant;
  experiment::PlanPeak peak;
  std::uint64_t rows_bytes = 0;  // the shard's result rows, held by run's tables, report, merge
  std::optional<std::uint64_t> available;
  std::optional<double> seconds;  // the estimate; none with --no-estimate
};

// Work: every variant at every point, except tile-independent ones once per input set; plus the
// fp64 golden once per input set and input format.
void count_work(PlanView& v) {
  std::set<std::string> input_sets;
  std::set<std::pair<std::string, int>> goldens;
  std::set<std::pair<std::string, std::size_t>> shared;
  for (const experiment::Point* p : v.points) {
    const double f = experiment::point_flops(*p);
    input_sets.insert(p->input_key);
    for (std::size_t i = 0; i < v.config.variants.size(); ++i) {
      const experiment::Variant& x = v.config.variants[i];
      if (goldens.insert({p->input_key, static_cast<int>(x.policy.input)}).second)
        v.golden_flops += f;
      if (experiment::tile_independent(x) && !shared.insert({p->input_key, i}).second) continue;
      v.variant_flops += f;
      v.flops_by_variant[i] += f;
    }
  }
  v.input_sets = input_sets.size();
}

PlanView make_view(const PlanArgs& a) {
  PlanView v;
  v.config = load_config_or_usage(a.config, a.overrides).config;
  v.shard = parse_shard(a.shard);
  try {
    v.plan = experiment::make_plan(v.config);
  } catch (const experiment::ConfigError& e) {
    throw UsageError(a.config + ": " + e.what());
  }
  for (const experiment::Point& p : v.plan.points)
    if (experiment::shard_of(p, v.shard.count) == v.shard.index) v.points.push_back(&p);
  v.warnings = experiment::config_warnings(v.config);
  count_work(v);
  v.peak = experiment::plan_peak_bytes(v.config, v.plan, a.threads, v.shard.index, v.shard.count);
  v.rows_bytes = experiment::rows_bytes(v.config, v.points.size());
  v.available = io::available_memory_bytes();
  if (a.no_estimate) return v;
  double seconds =
      v.golden_flops * seconds_per_flop(attention::Algorithm::baseline, numerics::kGoldenPolicy);
  for (const auto& [i, f] : v.flops_by_variant) {
    const experiment::Variant& x = v.config.variants[i];
    if (x.backend != experiment::Backend::cpu) continue;
    seconds += f * seconds_per_flop(x.algorithm, x.policy);
  }
  // CPU seconds over the run's threads: the wall time of an otherwise idle machine.
  v.seconds = seconds / run_threads(a.threads);
  return v;
}

std::string ratio_to_name(const experiment::Config& config, std::size_t v) {
  const int ref = config.ratio_reference(v);
  return ref >= 0 && static_cast<std::size_t>(ref) != v
             ? config.variants[static_cast<std::size_t>(ref)].name
             : "";
}

std::string reference_name(const experiment::Config& config, std::size_t v) {
  const int ref = config.output_reference(v);
  return ref >= 0 ? config.variants[static_cast<std::size_t>(ref)].name : "";
}

void print_plan_table(const PlanArgs& a, const PlanView& v) {
  const experiment::Config& config = v.config;
  std::printf("config \"%s\" (hash %s)%s%s\n", config.name.c_str(), config.hash.c_str(),
              config.description.empty() ? "" : ": ", config.description.c_str());
  std::printf("\nvariants (%zu):\n", config.variants.size());
  Table variants({"name", "algorithm", "policy", "backend", "baseline", "ratio_to", "reference"});
  for (std::size_t i = 0; i < config.variants.size(); ++i) {
    const experiment::Variant& x = config.variants[i];
    variants.add_row({x.name, experiment::variant_algorithm_name(x), x.policy_label,
                      experiment::backend_name(x.backend), x.baseline ? "yes" : "",
                      ratio_to_name(config, i), reference_name(config, i)});
  }
  variants.print(stdout, /*left_align_all=*/true);

  std::printf("\npoints: %zu%s (%zu trial(s) x %zu axis combinations)\n", v.points.size(),
              v.shard.count > 1
                  ? (" in shard " + std::to_string(v.shard.index) + "/" +
                     std::to_string(v.shard.count) + " of " + std::to_string(v.plan.points.size()))
                        .c_str()
                  : "",
              config.seeds.size(), v.plan.points.size() / config.seeds.size());
  std::vector<std::string> header = {"#", "id"};
  for (const std::string& axis : v.plan.varying_axes) header.push_back(axis);
  header.push_back("seed");
  Table table(header);
  for (std::size_t i = 0; i < v.points.size() && i < a.max_points; ++i) {
    const experiment::Point& p = *v.points[i];
    std::vector<std::string> row = {std::to_string(p.index), p.id};
    for (const std::string& axis : v.plan.varying_axes) row.push_back(p.axes.text(axis));
    row.push_back(std::to_string(p.seed));
    table.add_row(row);
  }
  table.print(stdout);
  if (v.points.size() > a.max_points)
    std::printf("... %zu more (--max-points)\n", v.points.size() - a.max_points);

  if (!v.plan.skipped.empty()) {
    std::printf("\nskipped axis combinations (%zu):\n", v.plan.skipped.size());
    std::vector<std::string> sh(v.plan.varying_axes.begin(), v.plan.varying_axes.end());
    sh.push_back("reason");
    Table skipped(sh);
    for (std::size_t i = 0; i < v.plan.skipped.size() && i < a.max_points; ++i) {
      std::vector<std::string> row;
      for (const std::string& axis : v.plan.varying_axes)
        row.push_back(v.plan.skipped[i].axes.text(axis));
      row.push_back(v.plan.skipped[i].reason);
      skipped.add_row(row);
    }
    skipped.print(stdout, /*left_align_all=*/true);
  }

  std::printf("\nwork: %.3g GFLOP in variants, %.3g GFLOP in fp64 goldens (%zu input sets)\n",
              v.variant_flops / 1e9, v.golden_flops / 1e9, v.input_sets);
  if (v.peak.point) {
    const std::uint64_t total = io::sat_add(v.peak.bytes, v.rows_bytes);
    std::printf(
        "peak memory: %s: %s at point %zu (%s) and %s for the result rows; %s available%s\n",
        io::format_bytes(total).c_str(), io::format_bytes(v.peak.bytes).c_str(),
        v.peak.point->index, v.peak.point->describe().c_str(),
        io::format_bytes(v.rows_bytes).c_str(),
        v.available ? io::format_bytes(*v.available).c_str() : "unknown",
        v.available && total > *v.available ? ": `attndev run` would refuse it" : "");
  }
  if (v.seconds)
    std::printf(
        "estimated time: %s on this machine with %.0f thread(s), if nothing else runs "
        "(calibrated by the CPU time of one 256x256x64 problem per variant on one thread, so the "
        "machine's load does not move it; cuda and external variants not counted)\n",
        experiment::format_duration(*v.seconds).c_str(), run_threads(a.threads));
}

void print_plan_json(const PlanArgs& a, const PlanView& v) {
  const experiment::Config& config = v.config;
  nlohmann::json variants = nlohmann::json::array();
  for (std::size_t i = 0; i < config.variants.size(); ++i) {
    const experiment::Variant& x = config.variants[i];
    variants.push_back({{"name", x.name},
                        {"algorithm", experiment::variant_algorithm_name(x)},
                        {"policy", x.policy_label},
                        {"input_format", numerics::format_name(x.policy.input)},
                        {"backend", experiment::backend_name(x.backend)},
                        {"baseline", x.baseline},
                        {"ratio_to", ratio_to_name(config, i)},
                        {"reference", reference_name(config, i)}});
  }
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < v.points.size() && i < a.max_points; ++i) {
    const experiment::Point& p = *v.points[i];
    points.push_back(
        {{"index", p.index}, {"id", p.id}, {"axes", p.axes.to_json()}, {"seed", p.seed}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (std::size_t i = 0; i < v.plan.skipped.size() && i < a.max_points; ++i)
    skipped.push_back(
        {{"axes", v.plan.skipped[i].axes.to_json()}, {"reason", v.plan.skipped[i].reason}});
  nlohmann::json out = {
      {"name", config.name},
      {"hash", config.hash},
      {"description", config.description},
      {"variants", variants},
      {"varying_axes", v.plan.varying_axes},
      {"points_total", v.plan.points.size()},
      {"points_in_shard", v.points.size()},
      {"shard", {{"index", v.shard.index}, {"count", v.shard.count}}},
      {"points", points},
      {"skipped_total", v.plan.skipped.size()},
      {"skipped", skipped},
      {"variant_gflop", v.variant_flops / 1e9},
      {"golden_gflop", v.golden_flops / 1e9},
      {"input_sets", v.input_sets},
      {"peak_memory_bytes",
       v.peak.point ? nlohmann::json(io::sat_add(v.peak.bytes, v.rows_bytes)) : nlohmann::json()},
      {"point_memory_bytes", v.peak.point ? nlohmann::json(v.peak.bytes) : nlohmann::json()},
      {"rows_memory_bytes", v.rows_bytes},
      {"available_memory_bytes", v.available ? nlohmann::json(*v.available) : nlohmann::json()},
      {"estimated_seconds", v.seconds ? nlohmann::json(*v.seconds) : nlohmann::json()},
      {"warnings", v.warnings}};
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_plan_command(cli::Command& app) {
  auto args = std::make_shared<PlanArgs>();
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
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the tables");
  cmd->callback([args] {
    if (args->threads < 0)
      throw UsageError("-j/--threads must be >= 0, got " + std::to_string(args->threads));
    const PlanView view = make_view(*args);
    print_config_warnings(args->config, view.warnings);
    if (args->json)
      print_plan_json(*args, view);
    else
      print_plan_table(*args, view);
  });
}

}  // namespace attndev::app
