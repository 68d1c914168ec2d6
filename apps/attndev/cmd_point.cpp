// `attndev point`: one point, measured three ways on identical rounded inputs: the FP64 golden,
// the variant (algorithm x policy) and the same-precision baseline, with every metric of the
// variant and the baseline against the golden and their ratio (docs/CONTRIBUTING.md #8: a deviation
// means something only next to a baseline's at the same precision). The variant runs through
// experiment::run_variant, the same call `attndev run` makes, so a kernel reachable here is
// reachable from a config and vice versa.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "cli_util.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "config/policy_json.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/run/device_backend.hpp"
#include "experiment/run/dump.hpp"
#include "experiment/spec/inputs_file.hpp"
#include "experiment/spec/memory.hpp"
#include "io/memory.hpp"
#include "experiment/run/variant_runner.hpp"
#include "measure/measure.hpp"
#include "metrics/deviation.hpp"

namespace attndev::app {

namespace {

struct PointArgs {
  std::string algo = "flash2";
  std::string policy = "kernel-bf16";
  std::string baseline_policy;  // empty: the variant's policy
  int n = 1024;
  int n_kv = 0;  // 0: same as n
  int d = 64;
  int batch = 1;
  int heads = 1;
  int br = 64;
  int bc = 64;
  bool causal = false;
  std::string scale_on = "scores";
  std::string dist = "normal(0,1)";
  std::uint64_t seed = 0;
  int threads = 0;
  bool json = false;
  // cpu: everything on the emulator. cuda: the variant on its CUDA kernel, and the inputs, the
  // golden and the baseline (the emulated twin) on the device as well (the run-level backend).
  std::string backend = "cpu";
  std::string inputs;              // Q, K, V from this file instead of drawing them
  std::string dump;                // write inputs, golden and outputs (safetensors) here
  bool shape_flags_given = false;  // --n, --n-kv, --d, --batch, --heads, --dist or --seed
};

// 0/0 is "equally exact" (both matched the golden bit for bit), not an undefined ratio.
double ratio(double variant, double baseline) {
  if (variant == 0 && baseline == 0) return 1.0;
  return variant / baseline;
}

nlohmann::json deviation_json(const metrics::Deviation& d, double seconds) {
  return {{"max_abs", json_number(d.max_abs)},
          {"mean_abs", json_number(d.mean_abs)},
          {"std_abs", json_number(d.std_abs)},
          {"rmse", json_number(d.rmse)},
          {"rel_l2", json_number(d.rel_l2)},
          {"rel_l1", json_number(d.rel_l1)},
          {"max_rel", json_number(d.max_rel)},
          {"cos_sim", json_number(d.cos_sim)},
          {"nan_count", d.nan_count},
          {"inf_count", d.inf_count},
          {"worst_index", d.worst_index},
          {"count", d.count},
          {"time_s", seconds}};
}

std::string where(const attention::Tensor& t, std::int64_t flat) {
  if (flat < 0) return "-";
  const std::int64_t col = flat % t.cols, row = flat / t.cols % t.rows;
  const std::int64_t h = flat / (static_cast<std::int64_t>(t.cols) * t.rows) % t.heads;
  const std::int64_t b = flat / (static_cast<std::int64_t>(t.cols) * t.rows * t.heads);
  return std::to_string(flat) + " (b" + std::to_string(b) + " h" + std::to_string(h) + " r" +
         std::to_string(row) + " c" + std::to_string(col) + ")";
}

// experiment::variant_from_parts, the flag named in place of the field.
experiment::Variant variant_from_flags(const std::string& algo,
                                       const numerics::PrecisionPolicy& policy,
                                       const std::string& backend) {
  try {
    return experiment::variant_from_parts(algo, policy, backend);
  } catch (const config::ConfigError& e) {
    const std::string flag = "--" + e.path();
    throw UsageError(flag + ": " + e.message());
  }
}

// Everything the flags say, validated before anything is computed: a bad flag costs nothing.
struct PointSetup {
  numerics::PrecisionPolicy policy, baseline_policy;
  experiment::Variant variant, baseline;
  experiment::Distribution dist;
  attention::Options options;
};

attention::ScalePlacement parse_scale_placement(const std::string& text) {
  if (text == "scores") return attention::ScalePlacement::scores;
  if (text == "query") return attention::ScalePlacement::query;
  constexpr std::string_view kPlacements[] = {"scores", "query"};
  throw UsageError("--scale-placement: unknown placement \"" + text + "\"" +
                   config::did_you_mean(text, kPlacements) + "; valid: scores, query");
}

PointSetup validate(const PointArgs& a) {
  PointSetup s;
  if (a.backend == "cuda") {
    // Before anything is computed: without a device nothing of the point can run as asked.
    const std::string missing = experiment::cuda_backend_missing();
    if (!missing.empty()) throw UsageError("--backend cuda: " + missing);
  }
  s.policy = parse_policy_arg(a.policy, "--policy");
  s.variant = variant_from_flags(a.algo, s.policy, a.backend);
  s.baseline_policy = a.baseline_policy.empty()
                          ? s.policy
                          : parse_policy_arg(a.baseline_policy, "--baseline-policy");
  s.baseline = variant_from_flags("baseline", s.baseline_policy, "cpu");
  s.baseline.name = "baseline";
  s.dist = parse_distribution_arg(a.dist, "--distribution");
  require_at_least(a.n, 1, "--seq-len");
  require_at_least(a.n_kv, 0, "--seq-len-kv");
  require_at_least(a.d, 1, "--head-dim");
  require_at_least(a.batch, 1, "--batch");
  require_at_least(a.heads, 1, "--heads");
  require_at_least(a.br, 1, "--block-r");
  require_at_least(a.bc, 1, "--block-c");
  require_at_least(a.threads, 0, "-j/--threads");
  if (!a.inputs.empty() && a.shape_flags_given)
    throw UsageError(
        "--inputs: the shapes and values come from the file; drop --seq-len, --seq-len-kv, "
        "--head-dim, --batch, --heads, --distribution and --seed");
  s.options.scale_placement = parse_scale_placement(a.scale_on);
  s.options.causal = a.causal;
  s.options.block_r = a.br;
  s.options.block_c = a.bc;
  s.options.threads = a.threads;
  return s;
}

// Held at once: the inputs, three outputs (golden, variant, baseline) and one run's working set.
void require_memory(const attention::Shape& shape, const attention::Options& options,
                    bool inputs_held) {
  std::uint64_t bytes =
      io::sat_add(io::sat_mul(3, experiment::output_bytes(shape)),
                  experiment::attention_run_bytes(shape, options, options.threads));
  if (!inputs_held) bytes = io::sat_add(bytes, experiment::inputs_bytes(shape));
  io::require_memory(
      bytes, "point (B=" + std::to_string(shape.batch) + " H=" + std::to_string(shape.heads) +
                 " N=" + std::to_string(shape.seq_q) + " N_kv=" + std::to_string(shape.seq_kv) +
                 " d=" + std::to_string(shape.head_dim) + ")");
}

bool on_device(const PointArgs& a) {
  return a.backend == "cuda";
}

// One set of inputs, rounded once to the variant's input format: the golden and the variant see
// the same values. A baseline policy with a narrower input format rounds them again in its own
// input stage (that rounding is part of what it measures).
attention::Inputs point_inputs(const PointArgs& a, const PointSetup& s) {
  if (a.inputs.empty()) {
    const attention::Shape shape{a.batch, a.heads, a.n, a.n_kv > 0 ? a.n_kv : a.n, a.d};
    require_memory(shape, s.options, /*inputs_held=*/false);
    if (on_device(a)) return experiment::device_drawn(shape, s.dist, a.seed)(s.policy.input);
    return measure::drawn(shape, s.dist, a.seed)(s.policy.input);
  }
  attention::Inputs raw;
  try {
    raw = experiment::read_inputs_file(a.inputs);
  } catch (const io::MemoryError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--inputs: ") + e.what());
  }
  require_memory(raw.shape(), s.options, /*inputs_held=*/true);
  return measure::round_inputs(raw, s.policy.input);
}

// The golden and both variants on the same inputs, each variant measured against the golden with
// the variant's output format setting the max_rel floor (the baseline is put beside the variant,
// so it is measured on the variant's scale).
struct PointResult {
  attention::Inputs inputs;
  measure::Golden golden;
  attention::Output variant_out, baseline_out;
  metrics::Deviation variant_dev, baseline_dev;
  double max_rel_floor = 0;
  double inputs_s = 0, golden_s = 0, variant_s = 0, baseline_s = 0;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The variant's output; a skipped variant compared nothing (exit 3), a failed one is an error.
// On the device an emulated (cpu) variant runs as its twin.
attention::Output run_or_exit(const experiment::Variant& v, const attention::Inputs& inputs,
                              const attention::Options& options, bool device, double& seconds) {
  experiment::VariantOutcome r = device && v.backend == experiment::Backend::cpu
                                     ? experiment::run_twin_variant(v, inputs, options)
                                     : experiment::run_variant(v, inputs, options);
  seconds = r.runtime_ms / 1e3;
  if (r.status.kind == experiment::StatusKind::skipped) {
    std::fprintf(stderr, "attndev point: %s: nothing compared\n", r.status.text().c_str());
    throw CommandExit{kExitNothingCompared};
  }
  if (!r.status.is_ok()) throw std::runtime_error("point: " + v.name + ": " + r.status.text());
  return std::move(r.output);
}

PointResult measure_point(const PointArgs& a, const PointSetup& s) {
  PointResult r;
  auto start = std::chrono::steady_clock::now();
  r.inputs = point_inputs(a, s);
  r.inputs_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  try {
    r.golden = measure::golden_of(r.inputs, s.options,
                                  on_device(a) ? experiment::device_golden() : measure::GoldenFn{});
  } catch (const std::invalid_argument& e) {
    // The emulator names the impossible field; it came from a flag, so it is a usage error.
    throw UsageError(std::string("point: ") + e.what());
  }
  r.golden_s = seconds_since(start);
  // The guard every caller shares (`run` marks such a row skipped): nan metrics and exit 0 would
  // read as a measurement.
  if (const auto why = measure::unmeasurable(r.inputs, r.golden, s.policy.input)) {
    std::fprintf(stderr, "attndev point: skipped: %s: nothing compared\n", why->c_str());
    throw CommandExit{kExitNothingCompared};
  }
  // One point is one question: an algorithm that cannot run it (a recipe's blocks that do not
  // tile the head dim, a profile without its instructions) is a usage error, not a skipped row.
  // (A twin without the head dim is a skipped row, exit 3, as in a sweep: test_cli_tensor_cores.)
  if (s.variant.backend == experiment::Backend::cpu &&
      attention::is_quant_algorithm(s.variant.algorithm))
    if (const std::string why =
            attention::unsupported_reason(s.variant.algorithm, s.variant.policy, r.inputs.shape(),
                                          s.options.block_r, s.options.block_c);
        !why.empty())
      throw UsageError("point: " + why);
  r.variant_out = run_or_exit(s.variant, r.inputs, s.options, on_device(a), r.variant_s);
  r.baseline_out = run_or_exit(s.baseline, r.inputs, s.options, on_device(a), r.baseline_s);
  r.variant_dev = measure::deviation(r.variant_out.o.data, r.golden, s.policy.output);
  r.baseline_dev = measure::deviation(r.baseline_out.o.data, r.golden, s.policy.output);
  r.max_rel_floor = measure::max_rel_floor(s.policy.output, r.golden.max_abs);
  return r;
}

// The same files `attndev run` writes with "dump": true, read back by --inputs and match.
void dump_point(const PointArgs& a, const PointSetup& s, const PointResult& r) {
  const attention::Shape shape = r.inputs.shape();
  experiment::DumpWriter dump;
  dump.dir = a.dump;
  experiment::PointAxes axes;
  axes.inputs.path = a.inputs;
  axes.batch = shape.batch;
  axes.heads = shape.heads;
  axes.seq_len = shape.seq_q;
  axes.seq_len_kv = shape.seq_kv;
  axes.head_dim = shape.head_dim;
  axes.distribution = s.dist;
  axes.causal = a.causal;
  axes.scale_placement = s.options.scale_placement;
  axes.block_r = a.br;
  axes.block_c = a.bc;
  dump.base = {{"axes", axes.to_json().dump()},
               {"seed", std::to_string(a.seed)},
               {"provenance", provenance_json().dump()}};
  try {
    dump.inputs(r.inputs, s.policy.input);
    dump.golden(r.golden.output.o, s.policy.input);
    dump.variant(s.variant, experiment::Status::ok(), r.variant_out.o);
    dump.variant(s.baseline, experiment::Status::ok(), r.baseline_out.o);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--dump: ") + e.what());
  }
}

std::string algorithm_label(const experiment::Variant& v) {
  return experiment::variant_algorithm_name(v) +
         (v.backend == experiment::Backend::cuda ? " (cuda)" : "");
}

// Where each part was computed (a results row's ran_on, with the baseline beside the variant).
nlohmann::json ran_on_json(const PointArgs& a, const PointSetup& s) {
  const experiment::Backend run =
      on_device(a) ? experiment::Backend::cuda : experiment::Backend::cpu;
  const bool from_file = !a.inputs.empty();
  nlohmann::json j = experiment::ran_on(run, s.variant, from_file).to_json();
  j["baseline"] = experiment::ran_on(run, s.baseline, from_file).variant;
  return j;
}

void print_json(const PointArgs& a, const PointSetup& s, const PointResult& r) {
  const metrics::Deviation &dv = r.variant_dev, &db = r.baseline_dev;
  const attention::Shape shape = r.inputs.shape();
  nlohmann::json ratios = nlohmann::json::object();
  for (const auto& [name, v, b] :
       {std::tuple{"max_abs", dv.max_abs, db.max_abs},
        std::tuple{"mean_abs", dv.mean_abs, db.mean_abs},
        std::tuple{"std_abs", dv.std_abs, db.std_abs}, std::tuple{"rmse", dv.rmse, db.rmse},
        std::tuple{"rel_l2", dv.rel_l2, db.rel_l2}, std::tuple{"rel_l1", dv.rel_l1, db.rel_l1},
        std::tuple{"max_rel", dv.max_rel, db.max_rel}})
    ratios[name] = json_number(ratio(v, b));
  nlohmann::json stages = nlohmann::json::array();
  for (const attention::QuantStageReport& q : r.variant_out.quant)
    stages.push_back({{"stage", q.stage},
                      {"elements", q.elements},
                      {"saturated", q.saturated},
                      {"groups", q.groups},
                      {"zero_scales", q.zero_scales},
                      {"nonfinite_scales", q.nonfinite_scales},
                      {"rel_rmse", json_number(q.rel_rmse)}});
  const nlohmann::json out = {
      {"point",
       {{"algorithm", algorithm_label(s.variant)},
        {"baseline_policy_label", config::policy_label(s.baseline_policy)},
        {"baseline_policy_from", a.baseline_policy.empty() ? "policy" : "baseline-policy"},
        {"policy", config::policy_to_json(s.policy)},
        {"policy_label", config::policy_label(s.policy)},
        {"policy_stages", config::policy_stages_json(s.policy)},
        {"baseline_policy", config::policy_to_json(s.baseline_policy)},
        {"baseline_policy_stages", config::policy_stages_json(s.baseline_policy)},
        {"batch", shape.batch},
        {"heads", shape.heads},
        {"seq_q", shape.seq_q},
        {"seq_kv", shape.seq_kv},
        {"head_dim", shape.head_dim},
        {"block_r", a.br},
        {"block_c", a.bc},
        {"causal", a.causal},
        {"scale_placement", a.scale_on},
        {"distribution", a.inputs.empty() ? s.dist.describe() : "file"},
        {"inputs", a.inputs},
        {"seed", a.inputs.empty() ? nlohmann::json(a.seed) : nlohmann::json(nullptr)},
        {"threads", a.threads},
        {"backend", a.backend}}},
      {"max_rel_floor", json_number(r.max_rel_floor)},
      {"inputs", {{"time_s", r.inputs_s}}},
      {"golden", {{"time_s", r.golden_s}}},
      {"variant", deviation_json(dv, r.variant_s)},
      {"baseline", deviation_json(db, r.baseline_s)},
      {"ratio_to_baseline", ratios},
      {"ran_on", ran_on_json(a, s)},
      {"quantized_stages", stages},
      {"provenance", provenance_json()}};
  std::printf("%s\n", out.dump(2).c_str());
}

void print_table(const PointArgs& a, const PointSetup& s, const PointResult& r) {
  const metrics::Deviation &dv = r.variant_dev, &db = r.baseline_dev;
  const attention::Shape shape = r.inputs.shape();
  const std::string algo_name = algorithm_label(s.variant);
  // Inputs read from a file have no distribution or seed: name the file instead (--dist and
  // --seed are refused with --inputs, so their defaults would describe inputs never drawn).
  const std::string source = a.inputs.empty()
                                 ? "dist=" + s.dist.describe() + " seed=" + std::to_string(a.seed)
                                 : "inputs=" + a.inputs;
  std::printf(
      "point: %s under %s vs baseline under %s | B=%d H=%d N=%d N_kv=%d d=%d Br=%d Bc=%d "
      "causal=%s scale-on=%s %s\n",
      algo_name.c_str(), config::policy_label(s.policy).c_str(),
      config::policy_label(s.baseline_policy).c_str(), shape.batch, shape.heads, shape.seq_q,
      shape.seq_kv, shape.head_dim, a.br, a.bc, a.causal ? "yes" : "no", a.scale_on.c_str(),
      source.c_str());
  // The ratio's meaning depends on which baseline it divides by: the same policy (how much the
  // tiling alone costs) or a framework's math path (what a user of the framework would get);
  // said on every table, since the default is the former.
  std::printf("baseline: %s (%s)\n", config::policy_label(s.baseline_policy).c_str(),
              a.baseline_policy.empty()
                  ? "the variant's own policy, the default; --baseline-policy torch-math-bf16 "
                    "etc. divides by the framework's math path instead"
                  : "from --baseline-policy");
  std::printf(
      "time: inputs %.3f s, golden %.3f s, variant %.3f s, baseline %.3f s; "
      "max_rel floor %s\n",
      r.inputs_s, r.golden_s, r.variant_s, r.baseline_s, format_number(r.max_rel_floor).c_str());
  const nlohmann::json ran = ran_on_json(a, s);
  std::printf("ran on: inputs %s, golden %s, variant %s, baseline %s, metrics %s\n\n",
              ran["inputs"].get<std::string>().c_str(), ran["golden"].get<std::string>().c_str(),
              ran["variant"].get<std::string>().c_str(), ran["baseline"].get<std::string>().c_str(),
              ran["metrics"].get<std::string>().c_str());
  Table t({"metric (vs fp64 golden)", algo_name, "baseline", "ratio"});
  const auto row = [&](const char* name, double v, double b) {
    t.add_row({name, format_number(v), format_number(b), format_number(ratio(v, b), 2)});
  };
  row("max_abs", dv.max_abs, db.max_abs);
  row("mean_abs", dv.mean_abs, db.mean_abs);
  row("std_abs", dv.std_abs, db.std_abs);
  row("rmse", dv.rmse, db.rmse);
  row("rel_l2", dv.rel_l2, db.rel_l2);
  row("rel_l1", dv.rel_l1, db.rel_l1);
  row("max_rel", dv.max_rel, db.max_rel);
  t.add_row({"cos_sim", format_number(dv.cos_sim, 9), format_number(db.cos_sim, 9), "-"});
  t.add_row({"nan/inf", std::to_string(dv.nan_count) + "/" + std::to_string(dv.inf_count),
             std::to_string(db.nan_count) + "/" + std::to_string(db.inf_count), "-"});
  t.add_row({"worst index", where(r.variant_out.o, dv.worst_index),
             where(r.baseline_out.o, db.worst_index), "-"});
  t.print(stdout);
  if (r.variant_out.quant.empty()) return;
  // What each quantized stage did on its own: saturation is counted, never silent.
  std::printf("\nquantized stages of %s (relative RMS error of the stage alone):\n",
              algo_name.c_str());
  Table q({"stage", "elements", "saturated", "scales", "zero", "non-finite", "rel error"});
  for (const attention::QuantStageReport& st : r.variant_out.quant)
    q.add_row({st.stage, std::to_string(st.elements), std::to_string(st.saturated),
               std::to_string(st.groups), std::to_string(st.zero_scales),
               std::to_string(st.nonfinite_scales), format_number(st.rel_rmse)});
  q.print(stdout);
}

void run_point(const PointArgs& a) {
  const PointSetup setup = validate(a);
  const PointResult result = measure_point(a, setup);
  if (!a.dump.empty()) dump_point(a, setup, result);
  if (a.json) {
    print_json(a, setup, result);
  } else {
    print_table(a, setup, result);
  }
}

}  // namespace

void add_point_command(cli::Command& app) {
  auto args = std::make_shared<PointArgs>();
  cli::Command* cmd = app.add_subcommand(
      "point", "Measure one point: variant and same-precision baseline against the FP64 golden");
  // Names equal the config keys (docs/configs.md: seq_len -> --seq-len); the short forms stay as
  // aliases so that existing command lines keep working.
  cmd->add_option("--algorithm,--algo", args->algo,
                  "Algorithm: baseline, flash1, flash2, the fp8 ones (attndev list algorithms), or "
                  "flash2-tc (the tensor-core kernel, with --backend cuda)")
      ->capture_default_str();
  cmd->add_option("--policy", args->policy,
                  "Precision policy: a preset name or a JSON object "
                  "('{\"base\":\"kernel-bf16\",\"prob\":\"fp32\"}')")
      ->capture_default_str();
  cmd->add_option("--baseline-policy", args->baseline_policy,
                  "Policy of the baseline beside the variant (default: --policy, the same "
                  "precision; torch-math-bf16 etc. for the framework's math path)");
  std::vector<cli::Option*> shape_flags;
  shape_flags.push_back(
      cmd->add_option("--seq-len,--n", args->n, "Query sequence length")->capture_default_str());
  shape_flags.push_back(cmd->add_option("--seq-len-kv,--n-kv", args->n_kv,
                                        "Key/value sequence length (default: --seq-len)"));
  shape_flags.push_back(
      cmd->add_option("--head-dim,--d", args->d, "Head dimension")->capture_default_str());
  shape_flags.push_back(
      cmd->add_option("--batch", args->batch, "Batch size")->capture_default_str());
  shape_flags.push_back(
      cmd->add_option("--heads", args->heads, "Number of heads")->capture_default_str());
  cmd->add_option("--block-r,--br", args->br, "Rows of Q per tile (flash)")->capture_default_str();
  cmd->add_option("--block-c,--bc", args->bc, "Rows of K/V per tile (flash)")
      ->capture_default_str();
  cmd->add_flag("--causal", args->causal, "Causal mask (bottom-right aligned)");
  cmd->add_option("--scale-placement,--scale-on", args->scale_on,
                  "Softmax scale placement: scores or query")
      ->capture_default_str();
  shape_flags.push_back(cmd->add_option("--distribution,--dist", args->dist,
                                        "Input distribution: normal(mean,std), uniform(lo,hi), "
                                        "outlier(std,p), channel(std,bias)")
                            ->capture_default_str());
  shape_flags.push_back(
      cmd->add_option("--seed", args->seed, "Seed of the counter-based input generator")
          ->capture_default_str()
          ->unsigned_decimal());
  cmd->add_option("--inputs", args->inputs,
                  "Q, K, V from a file instead of a draw: a .safetensors file with tensors q, k, v "
                  "or a folder with q.npy, k.npy, v.npy; (B,H,N,d), (H,N,d) or (N,d)")
      ->non_empty();
  cmd->add_option("--dump", args->dump,
                  "Write the rounded Q, K, V, the golden O and both outputs to this folder "
                  "(safetensors; axes, policy and provenance in the metadata)")
      ->non_empty();
  cmd->add_option("-j,--threads", args->threads, "Threads (0: all hardware threads)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the table");
  cmd->add_option(
         "--backend", args->backend,
         "cpu (the emulator) or cuda: the variant on its CUDA kernel (--algorithm may then "
         "also be flash2-tc), and the inputs, golden and baseline on the GPU too; without "
         "a GPU, exit 2 before anything is computed")
      ->capture_default_str();
  cmd->callback([args, shape_flags] {
    for (const cli::Option* o : shape_flags) args->shape_flags_given |= o->count() > 0;
    run_point(*args);
  });
}

}  // namespace attndev::app
