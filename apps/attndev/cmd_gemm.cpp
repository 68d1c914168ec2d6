// `attndev gemm [--arch A] [--input F] [--m M --n N --k K] [--distribution D] [--seed S]
// [--promote-every K0] [--json]`: one GEMM D = A B of random matrices through a tensor-core
// profile (numerics/mma.hpp) beside fp32 FMA accumulation, both against an fp64 accumulation:
// the accumulation error the tensor cores add (docs/numerics.md, "Tensor cores", measures
// Hopper's fp8 13-bit accumulation with it). --promote-every K0 adds each K0-long partial product
// of the tensor cores (from C = 0) into an fp32 accumulator, DeepSeek-V3's remedy.

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "inputs/random_inputs.hpp"
#include "numerics/format.hpp"
#include "numerics/mma.hpp"

namespace attndev::app {

namespace {

namespace mma = numerics::mma;

struct GemmArgs {
  std::string arch = "sm90", input = "e4m3", instruction = "mma", dist = "normal(0,1)";
  int m = 64, n = 64, k = 4096, promote_every = 0;
  std::uint64_t seed = 0;
  bool json = false;
};

// Error of D against the fp64 accumulation: the largest elementwise relative error (elements
// whose reference is 0 left out) and max |D - ref| / max |ref|.
struct Error {
  double max_rel = 0, normwise = 0;
};

Error error_of(const std::vector<double>& d, const std::vector<double>& ref) {
  Error e;
  double scale = 0, max_abs = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    scale = std::max(scale, std::fabs(ref[i]));
    max_abs = std::max(max_abs, std::fabs(d[i] - ref[i]));
    if (ref[i] != 0) e.max_rel = std::max(e.max_rel, std::fabs(d[i] - ref[i]) / std::fabs(ref[i]));
  }
  e.normwise = scale > 0 ? max_abs / scale : 0;
  return e;
}

void run_gemm(const GemmArgs& a) {
  require_at_least(a.m, 1, "--m");
  require_at_least(a.n, 1, "--n");
  require_at_least(a.k, 1, "--k");
  require_at_least(a.promote_every, 0, "--promote-every");
  mma::Arch arch;
  if (!mma::parse_arch(a.arch, arch) || arch == mma::Arch::none)
    throw UsageError("--arch: unknown architecture \"" + a.arch +
                     "\"; valid: sm80, sm89, sm90, sm100");
  mma::Instruction instruction;
  if (!mma::parse_instruction(a.instruction, instruction))
    throw UsageError("--instruction: unknown instruction \"" + a.instruction +
                     "\"; valid: mma, wgmma (sm90), tcgen05 (sm100)");
  numerics::Format input;
  mma::Kind kind{};
  if (!numerics::parse_format(a.input, input) || !mma::kind_of(input, kind))
    throw UsageError("--input: \"" + a.input +
                     "\" is not a tensor-core input type; valid: fp16, bf16, tf32, e4m3, e5m2");
  const mma::DotFunction dot = mma::dot_function(arch, instruction, kind);
  if (!dot) throw UsageError("--arch: " + mma::profile_error(arch, instruction, kind));
  if (static_cast<double>(a.m) * a.k + static_cast<double>(a.k) * a.n > 1e9)
    throw UsageError("--m, --n, --k: A and B would hold more than 10^9 elements");
  const experiment::Distribution dist = parse_distribution_arg(a.dist, "--distribution");

  // A (M, K) and B^T (N, K) as the q and k streams of one head; tf32 operands are fp32 values.
  const numerics::Format held = input == numerics::Format::tf32 ? numerics::Format::fp32 : input;
  const attention::Tensor at =
      inputs::make_tensor(1, 1, a.m, a.k, dist, a.seed, inputs::TensorId::q, held);  // (M, K)
  const attention::Tensor bt =
      inputs::make_tensor(1, 1, a.n, a.k, dist, a.seed, inputs::TensorId::k, held);  // (N, K)
  const mma::Operands op = mma::operands(input, input);
  const std::size_t mn = static_cast<std::size_t>(a.m) * a.n;
  std::vector<double> tc(mn), fp32(mn), fp64(mn);  // (M, N) each
  for (int i = 0; i < a.m; ++i) {
    const double* ar = at.data.data() + static_cast<std::size_t>(i) * a.k;  // (K)
    for (int j = 0; j < a.n; ++j) {
      const double* br = bt.data.data() + static_cast<std::size_t>(j) * a.k;  // (K)
      const std::size_t e = static_cast<std::size_t>(i) * a.n + j;
      if (a.promote_every == 0) {
        tc[e] = dot(op, ar, 1, br, 1, a.k, 0.0, mma::Output::fp32);
      } else {
        // Each K0-long partial product from C = 0 on the tensor cores, added in fp32 (FADD).
        float acc = 0.f;
        for (int k0 = 0; k0 < a.k; k0 += a.promote_every)
          acc +=
              static_cast<float>(dot(op, ar + k0, 1, br + k0, 1,
                                     std::min(a.promote_every, a.k - k0), 0.0, mma::Output::fp32));
        tc[e] = acc;
      }
      float f = 0.f;
      double exact = 0;
      for (int t = 0; t < a.k; ++t) {
        const double x =
            input == numerics::Format::tf32 ? mma::detail::truncate_to_tf32(ar[t]) : ar[t];
        const double y =
            input == numerics::Format::tf32 ? mma::detail::truncate_to_tf32(br[t]) : br[t];
        f = std::fmaf(static_cast<float>(x), static_cast<float>(y), f);
        exact = std::fma(x, y, exact);
      }
      fp32[e] = f;
      fp64[e] = exact;
    }
  }
  const Error e_tc = error_of(tc, fp64), e_fp32 = error_of(fp32, fp64), e_vs = error_of(tc, fp32);
  mma::ProfileInfo info;
  mma::profile_info(arch, instruction, kind, info);
  if (a.json) {
    nlohmann::json j = {
        {"arch", a.arch},
        {"instruction", a.instruction},
        {"input", a.input},
        {"m", a.m},
        {"n", a.n},
        {"k", a.k},
        {"distribution", a.dist},
        {"seed", a.seed},
        {"promote_every", a.promote_every},
        {"block", info.block},
        {"frac_bits", info.frac_bits},
        {"e8m13", info.e8m13},
        {"tensor_cores", {{"max_rel", e_tc.max_rel}, {"normwise", e_tc.normwise}}},
        {"fp32_fma", {{"max_rel", e_fp32.max_rel}, {"normwise", e_fp32.normwise}}},
        {"tensor_cores_vs_fp32", {{"max_rel", e_vs.max_rel}, {"normwise", e_vs.normwise}}}};
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("gemm: D = A B, A (%d, %d), B (%d, %d), %s inputs %s, seed %llu\n", a.m, a.k, a.k,
              a.n, a.input.c_str(), a.dist.c_str(), static_cast<unsigned long long>(a.seed));
  std::printf(
      "tensor cores: %s %s, %d products per fused dot-add, F = %d, D %s%s\n\n", a.arch.c_str(),
      a.instruction.c_str(), info.block, info.frac_bits, info.e8m13 ? "e8m13 (RZ)" : "fp32 (RZ)",
      a.promote_every
          ? (", partial sums of " + std::to_string(a.promote_every) + " added in fp32").c_str()
          : "");
  std::printf("%-34s %14s %14s\n", "error", "max rel", "max|diff|/max|ref|");
  std::printf("%-34s %14.4e %14.4e\n", "tensor cores vs fp64 accumulation", e_tc.max_rel,
              e_tc.normwise);
  std::printf("%-34s %14.4e %14.4e\n", "fp32 FMA chain vs fp64", e_fp32.max_rel, e_fp32.normwise);
  std::printf("%-34s %14.4e %14.4e\n", "tensor cores vs fp32 FMA chain", e_vs.max_rel,
              e_vs.normwise);
}

}  // namespace

void add_gemm_command(cli::Command& app) {
  auto a = std::make_shared<GemmArgs>();
  cli::Command* cmd = app.add_subcommand(
      "gemm",
      "One GEMM of random matrices on a tensor-core model (sm80/sm89/sm90/sm100) beside fp32 FMA "
      "accumulation, both against fp64 accumulation: the error the tensor cores' accumulation "
      "adds");
  cmd->add_option("--arch", a->arch, "Tensor cores: sm80, sm89, sm90, sm100 (default sm90)");
  cmd->add_option("--input", a->input, "Operand type: fp16, bf16, tf32, e4m3, e5m2 (default e4m3)");
  cmd->add_option("--instruction", a->instruction,
                  "mma (mma.sync), wgmma (sm90), tcgen05 (sm100); default mma");
  cmd->add_option("--m", a->m, "Rows of A and D (default 64)");
  cmd->add_option("--n", a->n, "Columns of B and D (default 64)");
  cmd->add_option("--k", a->k, "The reduction length (default 4096)");
  cmd->add_option("--distribution", a->dist,
                  "Element distribution before rounding to the input type (default normal(0,1); "
                  "see `attndev list distributions`)");
  cmd->add_option("--seed", a->seed, "Seed of the inputs (default 0)");
  cmd->add_option("--promote-every", a->promote_every,
                  "Add each K0-long tensor-core partial product into an fp32 accumulator "
                  "(DeepSeek-V3's promotion; 0, the default: one chain over K)");
  cmd->add_flag("--json", a->json, "Print JSON instead of the table");
  cmd->callback([a] { run_gemm(*a); });
}

}  // namespace attndev::app
