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
#include "experiment/spec/device_memory.hpp"
#include "experiment/spec/memory.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/run/progress.hpp"
#include "experiment/run/variant_runner.hpp"
#include "experiment_cli.hpp"
#include "exit_codes.hpp"
#include "io/memory.hpp"

#if ATTNDEV_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

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
  std::string backend;        // empty: the config's
  std::string device_memory;  // a size: plan for a GPU of this memory (else the device's, if any)
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
  // Device memory (device_memory.hpp): the peak over the shard's points, the memory it is held
  // against (--device-memory, else the device's, else none) and the points that cannot fit.
  experiment::DevicePeak device_peak;
  std::optional<std::uint64_t> device_bytes;
  std::string device_name;  // "--device-memory" or the device's description
  std::vector<experiment::DeviceMisfit> misfits;
  std::size_t misfits_more = 0;
};

// The memory a plan's GPU work is held against: --device-memory, else this machine's device.
void device_memory_of(const PlanArgs& a, PlanView& v) {
  if (!a.device_memory.empty()) {
    try {
      v.device_bytes = experiment::parse_byte_size(a.device_memory);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--device-memory: ") + e.what());
    }
    v.device_name = "--device-memory " + a.device_memory;
    return;
  }
#if ATTNDEV_HAVE_CUDA
  std::string why;
  if (cuda::cuda_available(why)) {
    const cuda::DeviceInfo d = cuda::device_info();
    v.device_bytes = d.global_memory_bytes;
    v.device_name = d.describe();
  }
#endif
}

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
  if (!a.backend.empty()) v.config.backend = parse_run_backend(a.backend);
  v.shard = parse_shard(a.shard);
  try {
    v.plan = experiment::make_plan(v.config);
  } catch (const experiment::ConfigError& e) {
    throw UsageError(a.config + ": " + e.what());
  }
  const std::vector<std::uint32_t> shards = experiment::assign_shards(v.plan, v.shard.count);
  for (const experiment::Point& p : v.plan.points)
    if (shards[p.index] == v.shard.index) v.points.push_back(&p);
  v.warnings = experiment::config_warnings(v.config);
  count_work(v);
  v.peak = experiment::plan_peak_bytes(v.config, v.plan, a.threads, v.shard.index, v.shard.count);
  v.rows_bytes = experiment::rows_bytes(v.config, v.points.size());
  v.available = io::available_memory_bytes();
  v.device_peak = experiment::device_plan_peak(v.config, v.plan, v.shard.index, v.shard.count);
  device_memory_of(a, v);
  if (v.device_bytes && v.device_peak.point)
    v.misfits = experiment::device_misfits(v.config, v.plan, *v.device_bytes, v.shard.index,
                                           v.shard.count, a.max_points, v.misfits_more);
  if (a.no_estimate) return v;
  double seconds =
      v.golden_flops * seconds_per_flop(attention::Algorithm::baseline, numerics::kGoldenPolicy);
  if (v.config.backend == experiment::Backend::cuda) return v;  // nothing runs on this CPU
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

void print_device_memory(const PlanView& v);

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
  else if (!a.no_estimate && v.config.backend == experiment::Backend::cuda)
    std::printf(
        "estimated time: not estimated for the cuda backend (attndev bench --backend cuda "
        "times one point's parts on the GPU)\n");
  print_device_memory(v);
}

// Device memory: the peak and, held against a known device, the points that cannot fit.
void print_device_memory(const PlanView& v) {
  if (!v.device_peak.point) return;
  std::printf(
      "device memory: %s at point %zu (%s: %s, plus %s for the CUDA context and "
      "libraries)",
      io::format_bytes(v.device_peak.bytes).c_str(), v.device_peak.point->index,
      v.device_peak.part.name.c_str(), io::format_bytes(v.device_peak.part.bytes).c_str(),
      io::format_bytes(experiment::kDeviceReserve).c_str());
  if (!v.device_bytes) {
    std::printf("; no device here: --device-memory 80GiB checks the plan against a GPU's memory\n");
    return;
  }
  std::printf("; %s has %s\n", v.device_name.c_str(), io::format_bytes(*v.device_bytes).c_str());
  if (v.misfits.empty()) return;
  std::printf("points that cannot fit in device memory (%zu):\n",
              v.misfits.size() + v.misfits_more);
  Table t({"#", "needs", "largest part", "point"});
  for (const experiment::DeviceMisfit& m : v.misfits)
    t.add_row({std::to_string(m.point->index), io::format_bytes(m.bytes),
               m.part.name + " " + io::format_bytes(m.part.bytes), m.point->describe()});
  t.print(stdout, /*left_align_all=*/true);
  if (v.misfits_more) std::printf("... %zu more (--max-points)\n", v.misfits_more);
}

nlohmann::json device_memory_json(const PlanView& v) {
  if (!v.device_peak.point) return nullptr;
  nlohmann::json misfits = nlohmann::json::array();
  for (const experiment::DeviceMisfit& m : v.misfits)
    misfits.push_back({{"index", m.point->index},
                       {"bytes", m.bytes},
                       {"largest_part", m.part.name},
                       {"largest_part_bytes", m.part.bytes}});
  return {{"peak_bytes", v.device_peak.bytes},
          {"peak_point", v.device_peak.point->index},
          {"peak_part", v.device_peak.part.name},
          {"reserve_bytes", experiment::kDeviceReserve},
          {"device_bytes", v.device_bytes ? nlohmann::json(*v.device_bytes) : nlohmann::json()},
          {"device", v.device_name},
          {"misfits_total", v.misfits.size() + v.misfits_more},
          {"misfits", misfits}};
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
      {"backend", experiment::backend_name(config.backend)},
      {"device_memory", device_memory_json(v)},
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
  cmd->add_option("--backend", args->backend,
                  "Plan for this run-level backend (cpu or cuda) instead of the config's");
  cmd->add_option("--device-memory", args->device_memory,
                  "Hold the GPU work against a device of this memory (80GiB, 141GB, bytes) "
                  "instead of this machine's device: plan a GPU run on a CPU machine");
  cmd->callback([args] {
    if (args->threads < 0)
      throw UsageError("-j/--threads must be >= 0, got " + std::to_string(args->threads));
    const PlanView view = make_view(*args);
    print_config_warnings(args->config, view.warnings);
    if (args->json)
      print_plan_json(*args, view);
    else
      print_plan_table(*args, view);
    // A point the device cannot hold is refused as `run` would refuse it, after the numbers.
    if (!view.misfits.empty()) {
      std::fprintf(stderr,
                   "attndev: error: %zu point(s) cannot fit in the device memory of %s (%s); "
                   "leave them out (-a seq_len=[...] or a constraint) or plan for a larger "
                   "device\n",
                   view.misfits.size() + view.misfits_more, view.device_name.c_str(),
                   io::format_bytes(*view.device_bytes).c_str());
      throw CommandExit{kExitUsage};
    }
  });
}

}  // namespace attndev::app
