// `attndev bench`: throughput of the CPU emulator, next to an Eigen GEMM of the same FLOP count
// measured in the same run, so a reader sees how close emulation comes to what the hardware does
// with plain matrix products.
//
// Every timed configuration is first checked (docs/CONTRIBUTING.md #12): the output must be finite,
// and where a fast path runs it must equal the generic path bit for bit on a small sub-problem. A
// failed check is reported and nothing is timed for it (exit 1).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "attention/attention.hpp"
#include "bench_cuda.hpp"
#include "bench_gemm.hpp"
#include "cli_util.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment_cli.hpp"
#include "experiment/spec/memory.hpp"
#include "inputs/random_inputs.hpp"
#include "io/memory.hpp"
#include "numerics/round.hpp"

namespace attndev::app {

namespace {

// bench times the CPU emulator; the tensor-core kernel runs only on a GPU, where `bench --backend
// cuda` checks and times it with the other parts of a point (conventions #12: check, then time).
constexpr std::string_view kTensorCoreNote =
    "flash2-tc, the tensor-core CUDA kernel, is not an emulator algorithm: bench --backend cuda "
    "checks and times it on a GPU";

struct BenchArgs {
  int n = 4096;
  int n_kv = 0;  // 0: same as n
  int d = 128;
  int batch = 1;
  int heads = 1;
  std::string algo = "flash2";
  std::string policy = "kernel-bf16";
  int br = 64;
  int bc = 64;
  bool causal = false;
  int threads = 0;
  int repeats = 5;
  bool all = false;
  bool generic = false;
  bool json = false;
  std::string backend = "cpu";
};

struct Config {
  std::string label;  // "flash2 kernel-bf16", "golden fp64"
  attention::Algorithm algorithm;
  numerics::PrecisionPolicy policy;
  std::string policy_name;
};

struct Measured {
  Config config;
  std::string path;
  std::vector<double> seconds;
  double median = 0;
  double gflops = 0;
  bool check_ok = true;
  std::string check_message;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double seconds_of(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Inputs from the project's one generator (lib/inputs): uniform on [-sqrt(3), sqrt(3)] (unit
// variance), rounded to the input format. Throughput does not depend on the distribution; this
// only has to be reproducible and free of special values.
attention::Inputs bench_inputs(const attention::Shape& s, numerics::Format f) {
  const double half_width = std::sqrt(3.0);
  return inputs::make_inputs(s, inputs::Distribution::uniform(-half_width, half_width),
                             /*seed=*/1, f);
}

std::vector<Config> configs_of(const BenchArgs& a) {
  auto named = [](const char* name) {
    const numerics::PolicyPreset* p = numerics::find_preset(name);
    if (!p) throw std::logic_error(std::string("missing preset ") + name);
    return p->policy;
  };
  if (a.all) {
    // Every plain algorithm under every kernel, framework-math and framework-loop preset (the
    // framework-* family where this build has it) and fp32, then FA-3's fp8 kernel on inputs
    // stored in fp16 (configs/paper/fa3-table3.json), then the golden.
    std::vector<Config> out;
    for (const char* policy : {"kernel-bf16", "kernel-fp16", "torch-math-bf16", "torch-math-fp16",
                               "framework-bf16", "framework-fp16", "fp32"}) {
      if (!numerics::find_preset(policy)) continue;
      for (attention::Algorithm algo : {attention::Algorithm::flash2, attention::Algorithm::flash1,
                                        attention::Algorithm::baseline})
        out.push_back({std::string(attention::algorithm_name(algo)) + " " + policy, algo,
                       named(policy), policy});
    }
    numerics::PrecisionPolicy fp8 = named("fp8-e4m3");
    fp8.input = numerics::Format::fp16;
    out.push_back({"flash3-fp8 fp8-e4m3 (fp16 inputs)", attention::Algorithm::flash3_fp8, fp8,
                   "{\"base\": \"fp8-e4m3\", \"input\": \"fp16\"}"});
    out.push_back({"golden fp64", attention::Algorithm::baseline, numerics::kGoldenPolicy, "fp64"});
    return out;
  }
  if (a.algo == "flash2-tc")
    throw UsageError("--algorithm flash2-tc: " + std::string(kTensorCoreNote));
  const attention::Algorithm algo = parse_algorithm_arg(a.algo, "--algorithm");
  const numerics::PrecisionPolicy policy = parse_policy_arg(a.policy, "--policy");
  return {{a.algo + " " + a.policy, algo, policy, a.policy}};
}

// docs/CONTRIBUTING.md #12: the configuration must pass its check before it is timed.
void check(const Config& c, const attention::Shape& shape, const attention::Options& opt,
           const attention::Output& out, Measured& m) {
  for (double x : out.o.data) {
    if (!std::isfinite(x)) {
      m.check_ok = false;
      m.check_message = "non-finite output";
      return;
    }
  }
  if (m.path == "generic") return;
  // Odd sizes so that tile and vector tails are exercised; a power-of-two head_dim for the fp8
  // algorithms (their Hadamard rotation needs one, and the timed shape has one), and for a
  // recipe whose blocks cannot tile 67 the first of 64 and the timed head_dim that they tile.
  attention::Shape small{
      1, 1, 97, 83, std::min(shape.head_dim, attention::is_fp8_algorithm(c.algorithm) ? 64 : 67)};
  for (int d : {64, shape.head_dim})
    if (!attention::unsupported_reason(c.algorithm, c.policy, small, opt.block_r, opt.block_c)
             .empty())
      small.head_dim = std::min(shape.head_dim, d);
  const attention::Inputs in = bench_inputs(small, c.policy.input);
  attention::Options generic = opt;
  generic.path = attention::Options::Path::generic;
  const attention::Output f = attention::run(c.algorithm, c.policy, in, opt);
  const attention::Output g = attention::run(c.algorithm, c.policy, in, generic);
  if (f.o.data.size() != g.o.data.size() ||
      std::memcmp(f.o.data.data(), g.o.data.data(), f.o.data.size() * sizeof(double)) != 0) {
    m.check_ok = false;
    m.check_message = "fast path differs from the generic path";
  }
}

void check_args(const BenchArgs& a) {
  require_at_least(a.n, 1, "--seq-len");
  require_at_least(a.n_kv, 0, "--seq-len-kv");
  require_at_least(a.d, 1, "--head-dim");
  require_at_least(a.batch, 1, "--batch");
  require_at_least(a.heads, 1, "--heads");
  require_at_least(a.br, 1, "--block-r");
  require_at_least(a.bc, 1, "--block-c");
  require_at_least(a.threads, 0, "-j/--threads");
  require_at_least(a.repeats, 1, "--repeats");
}

// Held at once: one configuration's inputs, output and working set, then the Eigen GEMM's
// matrices (Q, K, V, the N_q x N_kv scores and O of one head, in double at most).
void require_bench_memory(const attention::Shape& shape, const attention::Options& opt,
                          int threads_arg) {
  const std::uint64_t nq = static_cast<std::uint64_t>(shape.seq_q),
                      nkv = static_cast<std::uint64_t>(shape.seq_kv),
                      d = static_cast<std::uint64_t>(shape.head_dim);
  const std::uint64_t gemm_bytes = io::sat_mul(
      8, io::sat_add(io::sat_mul(2, io::sat_mul(nq, d)),
                     io::sat_add(io::sat_mul(2, io::sat_mul(nkv, d)), io::sat_mul(nq, nkv))));
  io::require_memory(
      io::sat_add(io::sat_add(experiment::inputs_bytes(shape),
                              experiment::attention_run_bytes(shape, opt, threads_arg)),
                  gemm_bytes),
      "bench (B=" + std::to_string(shape.batch) + " H=" + std::to_string(shape.heads) +
          " N=" + std::to_string(shape.seq_q) + " N_kv=" + std::to_string(shape.seq_kv) +
          " d=" + std::to_string(shape.head_dim) + ")");
}

// One configuration: checked first, timed only when the check passed (conventions #12).
Measured measure_config(const Config& c, const attention::Shape& shape,
                        const attention::Options& opt, int repeats, double flops) {
  Measured m;
  m.config = c;
  m.path = attention::kernel_path(c.algorithm, c.policy, opt);
  const attention::Inputs in = bench_inputs(shape, c.policy.input);
  attention::Output out;
  try {
    out = attention::run(c.algorithm, c.policy, in, opt);  // warm-up, and the checked result
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("bench: ") + e.what());
  }
  check(c, shape, opt, out, m);
  if (!m.check_ok) return m;
  for (int r = 0; r < repeats; ++r)
    m.seconds.push_back(seconds_of([&] { out = attention::run(c.algorithm, c.policy, in, opt); }));
  m.median = median_of(m.seconds);
  m.gflops = flops / m.median * 1e-9;
  return m;
}

// What the results are printed beside.
struct BenchRun {
  attention::Shape shape;
  int threads = 0;
  double flops = 0;
  double gemm32 = 0, gemm64 = 0;  // median seconds of the Eigen GEMMs of equal FLOPs
};

void print_bench_json(const BenchArgs& a, const BenchRun& b, const std::vector<Measured>& results) {
  const double flops = b.flops, gemm32 = b.gemm32, gemm64 = b.gemm64;
  nlohmann::json doc;
  doc["provenance"] = provenance_json();
  doc["shape"] = {{"batch", b.shape.batch},
                  {"heads", b.shape.heads},
                  {"seq_q", b.shape.seq_q},
                  {"seq_kv", b.shape.seq_kv},
                  {"head_dim", b.shape.head_dim}};
  doc["causal"] = a.causal;
  doc["block_r"] = a.br;
  doc["block_c"] = a.bc;
  doc["threads"] = b.threads;
  doc["repeats"] = a.repeats;
  doc["flops"] = flops;
  doc["eigen_gemm_f32"] = {{"median_s", gemm32}, {"gflops", flops / gemm32 * 1e-9}};
  doc["eigen_gemm_f64"] = {{"median_s", gemm64}, {"gflops", flops / gemm64 * 1e-9}};
  nlohmann::json rows = nlohmann::json::array();
  for (const Measured& m : results) {
    nlohmann::json row = {{"label", m.config.label},
                          {"algorithm", attention::algorithm_name(m.config.algorithm)},
                          {"policy", m.config.policy_name},
                          {"path", m.path},
                          {"check", m.check_ok ? "ok" : "failed: " + m.check_message}};
    if (m.check_ok) {
      row["median_s"] = m.median;
      row["seconds"] = m.seconds;
      row["gflops"] = m.gflops;
      row["time_vs_eigen_f32"] = m.median / gemm32;
      row["time_vs_eigen_f64"] = m.median / gemm64;
    }
    rows.push_back(row);
  }
  doc["results"] = rows;
  std::printf("%s\n", doc.dump(2).c_str());
}

void print_bench_table(const BenchArgs& a, const BenchRun& b,
                       const std::vector<Measured>& results) {
  const double flops = b.flops, gemm32 = b.gemm32, gemm64 = b.gemm64;
  std::printf(
      "attention forward B=%d H=%d N_q=%d N_kv=%d d=%d%s Br=%d Bc=%d, %d threads, "
      "median of %d, %.3g GFLOP\n",
      b.shape.batch, b.shape.heads, b.shape.seq_q, b.shape.seq_kv, b.shape.head_dim,
      a.causal ? " causal" : "", a.br, a.bc, b.threads, a.repeats, flops * 1e-9);
  Table table({"variant", "path", "median s", "GFLOP/s", "x eigen f32", "x eigen f64"});
  auto fixed = [](double x, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    return std::string(buf);
  };
  for (const Measured& m : results) {
    if (!m.check_ok) {
      table.add_row({m.config.label, m.path, "check failed: " + m.check_message, "", "", ""});
      continue;
    }
    table.add_row({m.config.label, m.path, fixed(m.median, 4), fixed(m.gflops, 1),
                   fixed(m.median / gemm32, 2), fixed(m.median / gemm64, 2)});
  }
  table.add_row({"eigen gemm f32 (same FLOPs)", "-", fixed(gemm32, 4),
                 fixed(flops / gemm32 * 1e-9, 1), "1.00", fixed(gemm32 / gemm64, 2)});
  table.add_row({"eigen gemm f64 (same FLOPs)", "-", fixed(gemm64, 4),
                 fixed(flops / gemm64 * 1e-9, 1), fixed(gemm64 / gemm32, 2), "1.00"});
  table.print(stdout);
  std::printf("x eigen: emulator time / GEMM time (1.00 = as fast as two plain matrix products)\n");
}

// --backend cuda: the run-level cuda backend's parts at one point (bench_cuda.cpp).
void run_bench_on_device(const BenchArgs& a) {
  if (a.all)
    throw UsageError(
        "--all times the CPU emulator's standard set; with --backend cuda bench "
        "times one point's parts on the GPU: drop one of the two");
  if (a.generic)
    throw UsageError("--generic selects a CPU path; it has no meaning with --backend cuda");
  CudaBenchArgs c;
  c.shape = attention::Shape{a.batch, a.heads, a.n, a.n_kv > 0 ? a.n_kv : a.n, a.d};
  c.causal = a.causal;
  c.block_r = a.br;
  c.block_c = a.bc;
  c.policy = a.policy;
  c.repeats = a.repeats;
  c.json = a.json;
  run_cuda_bench(c);
}

void run_bench(const BenchArgs& a) {
  check_args(a);
  if (parse_run_backend(a.backend) == experiment::Backend::cuda) {
    run_bench_on_device(a);
    return;
  }
  const std::vector<Config> configs = configs_of(a);

  BenchRun b;
  b.shape = attention::Shape{a.batch, a.heads, a.n, a.n_kv > 0 ? a.n_kv : a.n, a.d};
  attention::Options opt;
  opt.causal = a.causal;
  opt.block_r = a.br;
  opt.block_c = a.bc;
  opt.threads = a.threads;
  if (a.generic) opt.path = attention::Options::Path::generic;
  b.threads = a.threads > 0 ? a.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  b.flops = attention::forward_flops(b.shape, a.causal);
  const double full_flops = attention::forward_flops(b.shape, /*causal=*/false);
  require_bench_memory(b.shape, opt, a.threads);

  std::vector<Measured> results;
  bool all_ok = true;
  for (const Config& c : configs) {
    results.push_back(measure_config(c, b.shape, opt, a.repeats, b.flops));
    all_ok = all_ok && results.back().check_ok;
  }

  // The GEMM references: equal FLOP count, scaled from the full product when causal.
  std::vector<double> t32, t64;
  for (int r = 0; r < a.repeats; ++r) {
    t32.push_back(eigen_gemm_seconds(/*single=*/true, b.shape, b.threads) * b.flops / full_flops);
    t64.push_back(eigen_gemm_seconds(/*single=*/false, b.shape, b.threads) * b.flops / full_flops);
  }
  b.gemm32 = median_of(t32);
  b.gemm64 = median_of(t64);

  if (a.json)
    print_bench_json(a, b, results);
  else
    print_bench_table(a, b, results);
  if (!all_ok) throw CommandExit{kExitFailure};
}

}  // namespace

void add_bench_command(cli::Command& app) {
  auto args = std::make_shared<BenchArgs>();
  cli::Command* cmd = app.add_subcommand(
      "bench",
      "Time the CPU emulator (median of repeats, GFLOP/s) against an Eigen GEMM of equal FLOPs");
  // Names equal the config keys; the short forms stay as aliases (as in `point`).
  cmd->add_option("--seq-len,--n", args->n, "Query sequence length N_q")->capture_default_str();
  cmd->add_option("--seq-len-kv,--n-kv", args->n_kv,
                  "Key/value sequence length (default: --seq-len)");
  cmd->add_option("--head-dim,--d", args->d, "Head dimension")->capture_default_str();
  cmd->add_option("--batch", args->batch, "Batch size B")->capture_default_str();
  cmd->add_option("--heads", args->heads, "Heads H")->capture_default_str();
  cmd->add_option("--algorithm,--algo", args->algo,
                  config::join_names(algorithm_names()) + " (`attndev list algorithms`); " +
                      std::string(kTensorCoreNote))
      ->capture_default_str();
  cmd->add_option("--policy", args->policy, "Preset name or policy JSON object")
      ->capture_default_str();
  cmd->add_option("--block-r,--br", args->br, "Br: query rows per tile")->capture_default_str();
  cmd->add_option("--block-c,--bc", args->bc, "Bc: key/value rows per tile")->capture_default_str();
  cmd->add_flag("--causal", args->causal, "Causal mask (bottom-right aligned)");
  cmd->add_option("-j,--threads", args->threads, "Threads (0: all hardware threads)")
      ->capture_default_str();
  cmd->add_option("--repeats", args->repeats, "Timed repetitions (the median is reported)")
      ->capture_default_str();
  cmd->add_flag("--all", args->all,
                "The standard set: flash2, flash1 and baseline under kernel-bf16/fp16, "
                "torch-math-bf16/fp16, framework-bf16/fp16 and fp32, flash3-fp8 (fp16 inputs), "
                "golden fp64 (ignores --algo/--policy)");
  cmd->add_flag("--generic", args->generic,
                "Force the generic path (every operation through the numerics *_in functions)");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->add_option("--backend", args->backend,
                  "cpu (the emulator, the default) or cuda: one point's parts on the GPU, one line "
                  "each (inputs, golden, flash2 and baseline twins under --policy, flash2-tc and "
                  "the cuBLAS baseline), each checked on a small problem before it is timed; "
                  "without a GPU, exit 2 before anything runs")
      ->capture_default_str();
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace attndev::app
