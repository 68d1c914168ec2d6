// The twins of the CUDA kernels PyTorch users run (fa2-cuda, fa2-cuda-unfused, mem-efficient):
// the one place that turns a twin algorithm and a policy into the twin's pieces (the kernel's
// build, its GPU, its GEMM step, its exp2) and answers "is this supported?" (docs/CONTRIBUTING.md
// #6). attention::unsupported_reason and attention::run() call these for those algorithms.
#pragma once

#include <memory>
#include <string>

#include "attention/attention.hpp"
#include "attention/problem.hpp"
#include "attention/twins/exp2_table.hpp"
#include "attention/twins/gpu_profile.hpp"
#include "attention/twins/steps.hpp"

namespace attndev::attention::twins {

// The GPU a policy's twin models: its tensor-core profile's (policy.mma), sm80's without one.
const GpuProfile& gpu_of(const numerics::PrecisionPolicy& policy);

// The GEMM step for a policy: the tensor-core model of its profile, or today's fp32 FMA chain.
std::unique_ptr<MmaChain> mma_chain_for(const numerics::PrecisionPolicy& policy);

// Empty when the twin runs this (policy, shape); else why not, for a skipped row.
std::string twin_unsupported_reason(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                                    const Shape& shape);

// The twins' exp2: the device table find_exp2_table() names (loaded once per process; a table
// that cannot be read throws std::runtime_error, every time it is asked for), else the project's
// exp2. What it is, in words (for provenance), through *source when given.
const Exp2& twin_exp2(std::string* source = nullptr);

void run_twin(Algorithm algorithm, const Problem& p, Output& out);

}  // namespace attndev::attention::twins
