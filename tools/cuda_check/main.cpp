// attndev_cuda_check: the GPU acceptance checks and throughput figures in one binary, for
// scripts/gpu-check.sh.
//
//   attndev_cuda_check sweep [--points 24] [--seed 1]
//       faithful flash1/flash2 vs the CPU emulator (bit-equality) on random points, and
//       flash2-tc vs the golden with the 2x-baseline-plus-floor rule at bf16 and fp16;
//       a table on stdout; exit 1 on any failure, 3 when nothing was compared.
//   attndev_cuda_check device [--part inputs|golden|twins|all] [--golden-n 32768]
//       the run-level cuda backend against the CPU path (device_path.cpp): the input kernel,
//       the device golden and every twin, bit for bit; exit 1 on any failure.
//   attndev_cuda_check throughput [--batch 4 --heads 16 --n 8192 --d 128 --repeats 10]
//       checks flash2-tc first (never times a kernel that failed its check), then times it at
//       bf16 and the cuBLAS dense bf16 GEMM rate, and prints the ratio.
// Exit 77 (ctest's "skipped") without a usable device.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "attention/attention.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda_check/checks.hpp"
#include "cuda_check/device_path.hpp"

namespace {

using namespace attndev;
constexpr int kExitSkipped = 77;

int run_sweep(int points, std::uint64_t seed) {
  std::printf("faithful kernels vs CPU emulator (bit-equality), seed %llu\n",
              static_cast<unsigned long long>(seed));
  std::printf("%-4s %-6s %-8s %s\n", "#", "result", "elements", "case");
  int compared = 0, failed = 0;
  int index = 0;
  for (const auto& c : cuda_check::faithful_cases(seed, points)) {
    const attention::Inputs in = cuda_check::random_inputs(c.shape, c.seed, c.policy.input);
    const attention::Output cpu = attention::run(c.algorithm, c.policy, in, c.options);
    const cuda::CudaRunResult gpu =
        cuda::run_cuda(*cuda::kernel_for(c.algorithm), c.policy, in, c.options);
    if (gpu.status != cuda::RunStatus::ok) {
      std::printf("%-4d %-6s %-8s %s  [%s]\n", index++, "FAIL", "-", c.name.c_str(),
                  gpu.status_text().c_str());
      ++failed;
      continue;
    }
    const auto cmp = cuda_check::compare_bits(cpu.o.data, gpu.output.o.data);
    const bool ok = cmp.compared > 0 && cmp.mismatches == 0;
    ++compared;
    failed += ok ? 0 : 1;
    std::printf("%-4d %-6s %-8zu %s", index++, ok ? "equal" : "DIFF", cmp.compared, c.name.c_str());
    if (!ok)
      std::printf("  [%zu mismatches; first at %zu: cpu %.17g gpu %.17g]", cmp.mismatches,
                  cmp.first_mismatch, cmp.reference_value, cmp.output_value);
    std::printf("\n");
  }

  std::printf("\nflash2-tc vs golden: max|tc-golden| <= 2 max|baseline-golden| + floor\n");
  std::printf("%-6s %-12s %-12s %-12s %s\n", "result", "tc_err", "2x_base+fl", "floor", "case");
  const attention::Shape shapes[] = {
      {2, 3, 257, 257, 64}, {1, 4, 200, 331, 128}, {1, 2, 300, 129, 64}, {2, 2, 513, 513, 128}};
  int s = 0;
  for (numerics::Format f : {numerics::Format::bf16, numerics::Format::fp16}) {
    for (const attention::Shape& shape : shapes) {
      const bool causal = s % 2 == 1;
      const int br = s % 3 == 0 ? 64 : 128;
      const auto r = cuda_check::check_tc(f, shape, causal, br, 64, seed + 100 + s);
      ++s;
      if (!r.compared) {
        std::printf("%-6s %-12s %-12s %-12s %s  [%s]\n", "FAIL", "-", "-", "-", r.name.c_str(),
                    r.status.c_str());
        ++failed;
        continue;
      }
      ++compared;
      failed += r.pass ? 0 : 1;
      std::printf("%-6s %-12.4e %-12.4e %-12.4e %s\n", r.pass ? "pass" : "FAIL",
                  r.rule.kernel.max_abs, r.rule.bound, r.rule.floor, r.name.c_str());
    }
  }
  std::printf("\n%d checks compared, %d failed\n", compared, failed);
  if (compared == 0) return 3;
  return failed == 0 ? 0 : 1;
}

int run_throughput(int batch, int heads, int n, int d, int repeats) {
  const cuda::DeviceInfo dev = cuda::device_info();
  std::printf("device: %s\n", dev.describe().c_str());
  // The check first, on a smaller problem of the same head dim and tile.
  const auto check = cuda_check::check_tc(numerics::Format::bf16, {1, 2, 1024, 1024, d},
                                          /*causal=*/false, 128, 64, 7);
  if (!check.compared || !check.pass) {
    std::printf("flash2-tc bf16 failed its check (%s): not timed\n", check.status.c_str());
    return 1;
  }
  cuda::TimingOptions timing;
  timing.enabled = true;
  timing.repeats = repeats;
  attention::Shape shape{batch, heads, n, n, d};
  const attention::Inputs in = cuda_check::random_inputs(shape, 11, numerics::Format::bf16);
  attention::Options opt;
  opt.block_r = 128;
  opt.block_c = 64;
  std::printf("%-34s %-10s %-10s\n", "kernel", "ms", "TFLOP/s");
  double tc_causal = -1, tc_full = -1;
  for (bool causal : {false, true}) {
    opt.causal = causal;
    const auto r = cuda::run_cuda(cuda::Kernel::flash2_tc,
                                  numerics::find_preset("kernel-bf16")->policy, in, opt, timing);
    if (r.status != cuda::RunStatus::ok) {
      std::printf("flash2-tc: %s\n", r.status_text().c_str());
      return 1;
    }
    (causal ? tc_causal : tc_full) = r.tflops;
    std::printf("flash2-tc bf16 B=%d H=%d N=%d d=%d%-7s %-10.3f %-10.1f\n", batch, heads, n, d,
                causal ? " causal" : "", r.runtime_ms, r.tflops);
  }
  const auto gemm = cuda::measure_gemm_rate(numerics::Format::bf16, 8192, 8192, 8192, timing);
  std::printf("%-34s %-10.3f %-10.1f\n", "cuBLAS bf16 GEMM 8192^3", gemm.runtime_ms, gemm.tflops);
  std::printf("flash2-tc / dense GEMM rate: %.2f (non-causal), %.2f (causal); goal >= 0.5\n",
              tc_full / gemm.tflops, tc_causal / gemm.tflops);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GPU checks of the attndev CUDA backend", "attndev_cuda_check"};
  app.require_subcommand(1);
  int points = 24;
  std::uint64_t seed = 1;
  auto* sweep = app.add_subcommand("sweep", "faithful == emulator bit for bit; flash2-tc rule");
  sweep->add_option("--points", points, "random faithful points (>= 20 for acceptance)");
  sweep->add_option("--seed", seed, "seed of the points and inputs");
  std::string part = "all";
  int golden_n = 32768;
  auto* device = app.add_subcommand("device", "inputs, golden and twins on the device == CPU");
  device->add_option("--part", part, "inputs, golden, twins or all")
      ->check(CLI::IsMember({"inputs", "golden", "twins", "all"}));
  device->add_option("--golden-n", golden_n, "largest N of the golden's long cases (from 4096)")
      ->check(CLI::PositiveNumber);
  int batch = 4, heads = 16, n = 8192, d = 128, repeats = 10;
  auto* tp = app.add_subcommand("throughput", "flash2-tc bf16 rate vs cuBLAS dense bf16 GEMM");
  tp->add_option("--batch", batch);
  tp->add_option("--heads", heads);
  tp->add_option("--n", n);
  tp->add_option("--d", d)->check(CLI::IsMember({64, 128}));
  tp->add_option("--repeats", repeats)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::string why;
  if (!cuda::cuda_available(why)) {
    std::fprintf(stderr, "SKIPPED: %s\n", why.c_str());
    return kExitSkipped;
  }
  try {
    if (sweep->parsed()) return run_sweep(points, seed);
    if (device->parsed()) return cuda_check::run_device_checks(part, golden_n);
    return run_throughput(batch, heads, n, d, repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attndev_cuda_check: failed: %s\n", e.what());
    return 1;
  }
}
