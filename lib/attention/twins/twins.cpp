// The twins' chooser: pieces and support, one place (twins.hpp).
#include "attention/twins/twins.hpp"

#include <mutex>
#include <stdexcept>

#include "attention/twins/fa2_cuda.hpp"
#include "attention/twins/mem_efficient.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::twins {

namespace {

// The tensor cores of a profile, through numerics/mma.hpp: mma.sync's fused dot-adds chained over
// k (FA-2 and the memory-efficient kernel run mma.sync m16n8k16 on every architecture).
struct TensorCoreChain final : MmaChain {
  numerics::mma::Arch arch;
  numerics::mma::Operands operands;
  numerics::mma::DotFunction dot;
  TensorCoreChain(numerics::mma::Arch a, numerics::Format input)
      : arch(a),
        operands(numerics::mma::operands(input, input)),
        dot(numerics::mma::dot_function(a, numerics::mma::Instruction::mma,
                                        numerics::mma::Kind::f16)) {
    if (!dot)
      throw std::invalid_argument(std::string("no mma.sync f16 profile for ") +
                                  numerics::mma::arch_name(a));
  }
  float chain(const double* a, std::ptrdiff_t sa, const double* b, std::ptrdiff_t sb, int n,
              float c) const override {
    return static_cast<float>(dot(operands, a, sa, b, sb, n, c, numerics::mma::Output::fp32));
  }
  std::string name() const override {
    return std::string("tensor cores ") + numerics::mma::arch_name(arch);
  }
};

bool is_16bit(numerics::Format f) {
  return f == numerics::Format::bf16 || f == numerics::Format::fp16;
}

}  // namespace

const GpuProfile& gpu_of(const numerics::PrecisionPolicy& policy) {
  const numerics::mma::Arch a = policy.mma;
  if (a == numerics::mma::Arch::none) return default_gpu_profile();
  const GpuProfile* g = find_gpu_profile(numerics::mma::arch_name(a));
  return g ? *g : default_gpu_profile();
}

std::unique_ptr<MmaChain> mma_chain_for(const numerics::PrecisionPolicy& policy) {
  const numerics::mma::Arch a = policy.mma;
  if (a == numerics::mma::Arch::none) return std::make_unique<FmaChain>(policy.fma);
  return std::make_unique<TensorCoreChain>(a, policy.input);
}

std::string twin_unsupported_reason(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                                    const Shape& shape) {
  const std::string name = algorithm_name(algorithm);
  if (!is_16bit(policy.input))
    return name + " runs bf16 and fp16 inputs only (the kernel's element types), not " +
           numerics::format_name(policy.input) + "; use kernel-bf16 or kernel-fp16";
  if (policy.model != numerics::Model::kernel)
    return name + " is a kernel: the framework rounding model does not apply";
  for (numerics::Stage s : {numerics::Stage::score_accum, numerics::Stage::score,
                            numerics::Stage::stats, numerics::Stage::out_accum})
    if (policy[s] != numerics::Format::fp32)
      return name + " keeps " + numerics::stage_name(s) + " in fp32 registers; the policy says " +
             numerics::format_name(policy[s]) + " (use kernel-bf16 or kernel-fp16)";
  std::string why;
  if (algorithm == Algorithm::mem_efficient) {
    MemEffPlan plan;
    if (!mem_efficient_plan(shape, plan, &why)) return why;
    return "";
  }
  Fa2Plan plan;
  if (!fa2_plan(shape, /*causal=*/false, gpu_of(policy), plan, &why)) return why;
  return "";
}

const Exp2& twin_exp2(std::string* source) {
  static std::mutex mu;
  static bool loaded = false;
  static Exp2 exp2;
  static std::string where;
  std::lock_guard<std::mutex> lock(mu);
  if (!loaded) {
    const std::string path = find_exp2_table();
    if (path.empty()) {
      exp2 = project_exp2();
      where = "the project's exp2 (numerics::exp2_f32; no measured table)";
    } else {
      const TableExp2 t(std::make_shared<const Exp2Table>(read_exp2_table(path)));
      where = t.name() + " from " + path;
      exp2 = t;
    }
    loaded = true;
  }
  if (source) *source = where;
  return exp2;
}

void run_twin(Algorithm algorithm, const Problem& p, Output& out) {
  if (const std::string why = twin_unsupported_reason(algorithm, p.policy, p.shape); !why.empty())
    throw std::invalid_argument(why);
  const std::unique_ptr<MmaChain> mma = mma_chain_for(p.policy);
  TwinSetup setup;
  setup.mma = mma.get();
  setup.exp2 = twin_exp2();
  setup.gpu = gpu_of(p.policy);
  switch (algorithm) {
    case Algorithm::fa2_cuda:
    case Algorithm::fa2_cuda_unfused: {
      Fa2Build build;
      build.unfused_exp2_arg = algorithm == Algorithm::fa2_cuda_unfused;
      run_fa2(p, setup, build, out);
      return;
    }
    case Algorithm::mem_efficient:
      run_mem_efficient(p, setup, out);
      return;
    default:
      throw std::logic_error("run_twin: not a twin algorithm");
  }
}

}  // namespace attndev::attention::twins
