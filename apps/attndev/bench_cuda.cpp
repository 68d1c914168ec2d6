#include "bench_cuda.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/run/device_backend.hpp"
#include "inputs/random_inputs.hpp"
#include "measure/checks.hpp"
#include "measure/measure.hpp"

#if ATTNDEV_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace attndev::app {

#if ATTNDEV_HAVE_CUDA

namespace {

// One line of the table: a part, where it ran, its check and its time.
struct Part {
  explicit Part(std::string n) : name(std::move(n)) {}
  std::string name;   // "inputs", "golden", "twin flash2 kernel-bf16", "kernel flash2-tc ..."
  std::string check;  // "ok: ..." / "failed: ..." / "skipped: ..."
  std::vector<double> seconds;
  double median = 0;
  bool ok() const { return check.rfind("ok", 0) == 0; }
};

double median_seconds(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Unit-variance uniform inputs, as the CPU bench draws them.
inputs::Distribution bench_distribution() {
  const double half_width = std::sqrt(3.0);
  return inputs::Distribution::uniform(-half_width, half_width);
}

attention::Inputs cpu_inputs(const attention::Shape& s, numerics::Format f) {
  return inputs::make_inputs(s, bench_distribution(), /*seed=*/1, f);
}

std::string verdict(const measure::CheckResult& c) {
  return (c.pass ? "ok: " : "failed: ") + c.detail;
}

// The run's output of a device call, or the reason it has none.
const attention::Output* output_of(const cuda::CudaRunResult& r, std::string& why) {
  if (r.status == cuda::RunStatus::ok) return &r.output;
  why = r.status_text();
  return nullptr;
}

// Checked first on `small`, then timed on the full shape, `repeats` times.
void measure_part(Part& part, const std::function<std::string()>& check,
                  const std::function<void()>& timed, int repeats) {
  part.check = check();
  if (!part.ok()) return;
  try {
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      timed();
      part.seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  } catch (const std::exception& e) {
    // Passed its check on the small problem and failed at full size (out of memory, say).
    part.check = std::string("failed at full size: ") + e.what();
    part.seconds.clear();
    return;
  }
  part.median = median_seconds(part.seconds);
}

// Throws when a timed call did not run: a part that passed its check failing at full size is a
// failure of the bench, named in the row.
void require_ok(const cuda::CudaRunResult& r, const std::string& what) {
  if (r.status != cuda::RunStatus::ok) throw std::runtime_error(what + ": " + r.status_text());
}

// The CUDA kernels (flash2-tc at its 128x64 tile, the cuBLAS baseline), checked against the
// emulated same-format baseline and the golden (lib/measure's baseline rule), then timed.
void kernel_parts(const CudaBenchArgs& a, const numerics::PrecisionPolicy& policy,
                  const attention::Options& opt, const attention::Inputs& small_in,
                  const attention::Inputs& in, std::vector<Part>& parts) {
  const measure::Golden small_gold = measure::golden_of(small_in, opt);
  // The same-format baseline of the rule: the framework math path at bf16/fp16 (as the check tool
  // and the GPU test hold flash2-tc to it), the policy itself otherwise.
  numerics::PrecisionPolicy base_policy = policy;
  if (policy.input == numerics::Format::bf16 || policy.input == numerics::Format::fp16)
    base_policy =
        numerics::find_preset("torch-math-" + std::string(numerics::format_name(policy.input)))
            ->policy;
  const attention::Output small_base =
      attention::run(attention::Algorithm::baseline, base_policy, small_in, opt);
  struct KernelRun {
    cuda::Kernel kernel;
    std::string label;
    attention::Options options;
  };
  attention::Options tc_opt = opt;
  tc_opt.block_r = 128;
  tc_opt.block_c = 64;
  for (const KernelRun& k : {KernelRun{cuda::Kernel::flash2_tc, "kernel flash2-tc 128x64", tc_opt},
                             KernelRun{cuda::Kernel::baseline, "kernel baseline (cuBLAS)", opt}}) {
    Part part{k.label + " " + a.policy};
    measure_part(
        part,
        [&] {
          std::string why;
          const cuda::CudaRunResult r = cuda::run_cuda(k.kernel, policy, small_in, k.options);
          const attention::Output* o = output_of(r, why);
          return o ? verdict(measure::within_baseline_rule(o->o.data, small_base.o.data, small_gold,
                                                           policy.output))
                   : why;
        },
        [&] { require_ok(cuda::run_cuda(k.kernel, policy, in, k.options), part.name); }, a.repeats);
    parts.push_back(part);
  }
}

std::vector<Part> bench_parts(const CudaBenchArgs& a) {
  const numerics::PrecisionPolicy policy = parse_policy_arg(a.policy, "--policy");
  const numerics::Format in_fmt = policy.input;
  attention::Options opt;
  opt.causal = a.causal;
  opt.block_r = a.block_r;
  opt.block_c = a.block_c;
  // Odd sizes: the tails of the tiles and the index arithmetic of the kernels.
  const attention::Shape small{1, 2, 129, 97, a.shape.head_dim};
  const attention::Inputs small_in = cpu_inputs(small, in_fmt);
  attention::Inputs in;  // the full shape's, from the timed input part
  std::vector<Part> parts;

  Part inputs_part{"inputs (Q, K, V drawn, " + std::string(numerics::format_name(in_fmt)) + ")"};
  measure_part(
      inputs_part,
      [&] {
        const attention::Inputs dev =
            cuda::draw_inputs_on_device(small, bench_distribution().params(), 1, in_fmt);
        return verdict(measure::bit_identical(dev.q.data, small_in.q.data)) +
               (measure::bit_identical(dev.v.data, small_in.v.data).pass ? "" : " (V differs)");
      },
      [&] { in = cuda::draw_inputs_on_device(a.shape, bench_distribution().params(), 1, in_fmt); },
      a.repeats);
  parts.push_back(inputs_part);
  if (!inputs_part.ok()) in = cpu_inputs(a.shape, in_fmt);  // the other parts still run

  Part golden_part{"golden (fp64, streamed baseline)"};
  measure_part(
      golden_part,
      [&] {
        std::string why;
        const cuda::CudaRunResult r = cuda::golden_on_device(small_in, opt);
        const attention::Output* o = output_of(r, why);
        return o ? verdict(
                       measure::bit_identical(o->o.data, attention::golden(small_in, opt).o.data))
                 : why;
      },
      [&] { require_ok(cuda::golden_on_device(in, opt), "golden"); }, a.repeats);
  parts.push_back(golden_part);

  for (attention::Algorithm algo : {attention::Algorithm::flash2, attention::Algorithm::baseline}) {
    Part twin{"twin " + std::string(attention::algorithm_name(algo)) + " " + a.policy};
    measure_part(
        twin,
        [&] {
          std::string why;
          const cuda::CudaRunResult r = cuda::run_twin(algo, policy, small_in, opt);
          const attention::Output* o = output_of(r, why);
          return o ? verdict(measure::bit_identical(
                         o->o.data, attention::run(algo, policy, small_in, opt).o.data))
                   : why;
        },
        [&] { require_ok(cuda::run_twin(algo, policy, in, opt), twin.name); }, a.repeats);
    parts.push_back(twin);
  }

  kernel_parts(a, policy, opt, small_in, in, parts);
  return parts;
}

}  // namespace

void run_cuda_bench(const CudaBenchArgs& a) {
  const std::string missing = experiment::cuda_backend_missing();
  if (!missing.empty()) throw UsageError("bench --backend cuda: " + missing);
  const std::vector<Part> parts = bench_parts(a);
  double total = 0;
  bool all_ok = true;
  for (const Part& p : parts) {
    total += p.median;
    // A kernel the dispatch table does not instantiate for this policy is skipped, not failed.
    all_ok = all_ok && (p.ok() || p.check.rfind("skipped", 0) == 0);
  }
  const cuda::DeviceInfo device = cuda::device_info();
  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Part& p : parts) {
      nlohmann::json row = {{"part", p.name}, {"where", "cuda"}, {"check", p.check}};
      if (p.ok()) {
        row["median_s"] = p.median;
        row["seconds"] = p.seconds;
      }
      rows.push_back(row);
    }
    const nlohmann::json doc = {{"provenance", provenance_json()},
                                {"device", device.describe()},
                                {"shape",
                                 {{"batch", a.shape.batch},
                                  {"heads", a.shape.heads},
                                  {"seq_q", a.shape.seq_q},
                                  {"seq_kv", a.shape.seq_kv},
                                  {"head_dim", a.shape.head_dim}}},
                                {"causal", a.causal},
                                {"policy", a.policy},
                                {"repeats", a.repeats},
                                {"parts", rows},
                                {"total_s", total}};
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf(
        "cuda backend on %s: B=%d H=%d N_q=%d N_kv=%d d=%d%s, policy %s, median of %d "
        "(wall time of each call: upload, kernel, download)\n",
        device.describe().c_str(), a.shape.batch, a.shape.heads, a.shape.seq_q, a.shape.seq_kv,
        a.shape.head_dim, a.causal ? " causal" : "", a.policy.c_str(), a.repeats);
    Table table({"part", "median s", "check (small problem first)"});
    for (const Part& p : parts) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4f", p.median);
      table.add_row({p.name, p.ok() ? buf : "-", p.check});
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", total);
    table.add_row({"total", buf, ""});
    table.print(stdout, /*left_align_all=*/true);
  }
  if (!all_ok) throw CommandExit{kExitFailure};
}

#else

void run_cuda_bench(const CudaBenchArgs&) {
  throw UsageError("bench --backend cuda: " + experiment::cuda_backend_missing());
}

#endif

}  // namespace attndev::app
