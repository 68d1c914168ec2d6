// The acceptance checks of the CUDA backend, shared by the GPU test (test/cuda/gpu_kernels.cpp),
// the host test of the kernels' row functions (test/cuda/test_faithful_host.cpp) and
// scripts/gpu-check.sh (through attndev_cuda_check):
//   * faithful flash1/flash2 == attention::run on the CPU, bit for bit, on random points;
//   * flash2-tc: max|tc - golden| <= 2 * max|baseline(same format) - golden| + floor, with the
//     floor derived from the output format (flash-attention's rule, docs/CONTRIBUTING.md #8).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "cuda/cuda_backend.hpp"
#include "inputs/random_inputs.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda_check {

using cuda::CudaRunResult;
using cuda::Kernel;
using cuda::run_cuda;
using cuda::RunStatus;

// splitmix64: picks the parameters of a case from (seed, case, salt).
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Q, K, V ~ N(0, 1) from the project's one generator (lib/inputs), rounded to `format`.
inline attention::Inputs random_inputs(const attention::Shape& shape, std::uint64_t seed,
                                       numerics::Format format) {
  return inputs::make_inputs(shape, inputs::Distribution::normal(0.0, 1.0), seed, format);
}

struct FaithfulCase {
  std::string name;  // describes itself, for logs and failure dumps
  attention::Algorithm algorithm;
  std::string policy_name;
  numerics::PrecisionPolicy policy;
  attention::Shape shape;
  attention::Options options;
  std::uint64_t seed;
};

// A pruned random product over the axes that change the faithful kernels' control flow: odd
// and tiny N, N_q != N_kv both ways (fully masked causal rows), tiles that do not divide N and
// tiles of 1, odd head dims, causal, both scale placements, fused and unfused policies.
inline std::vector<FaithfulCase> faithful_cases(std::uint64_t seed, int count) {
  static const char* kPolicies[] = {"kernel-bf16", "working-bf16",    "fp32",    "fp64",
                                    "kernel-fp16", "torch-math-fp16", "fp8-e4m3"};
  static const int kSeq[] = {1, 7, 33, 64, 113, 130};
  static const int kDims[] = {1, 3, 16, 33, 64};
  static const int kTiles[] = {1, 5, 16, 32, 64};
  std::vector<FaithfulCase> cases;
  for (int c = 0; c < count; ++c) {
    auto pick = [&](int salt, int n) {
      return static_cast<int>(mix64(seed + 1000003ull * c + salt) % n);
    };
    FaithfulCase fc;
    fc.algorithm = c % 2 == 0 ? attention::Algorithm::flash2 : attention::Algorithm::flash1;
    // Cycle the presets so every one appears; every 5th case is a custom unfused policy.
    fc.policy_name = kPolicies[(c / 2) % std::size(kPolicies)];
    fc.policy = numerics::find_preset(fc.policy_name)->policy;
    if (c % 5 == 4) {
      fc.policy.fma = false;
      fc.policy_name += "+fma=false";
    }
    fc.shape = {1 + pick(1, 2), 1 + pick(2, 2), kSeq[pick(3, 6)], kSeq[pick(4, 6)],
                kDims[pick(5, 5)]};
    fc.options.causal = c % 3 != 1;
    fc.options.block_r = kTiles[pick(6, 5)];
    fc.options.block_c = kTiles[pick(7, 5)];
    fc.options.scale_placement =
        c % 7 == 6 ? attention::ScalePlacement::query : attention::ScalePlacement::scores;
    fc.seed = mix64(seed + c);
    fc.name = std::string(attention::algorithm_name(fc.algorithm)) + " " + fc.policy_name +
              " B=" + std::to_string(fc.shape.batch) + " H=" + std::to_string(fc.shape.heads) +
              " Nq=" + std::to_string(fc.shape.seq_q) + " Nkv=" + std::to_string(fc.shape.seq_kv) +
              " d=" + std::to_string(fc.shape.head_dim) +
              " Br=" + std::to_string(fc.options.block_r) +
              " Bc=" + std::to_string(fc.options.block_c) + (fc.options.causal ? " causal" : "") +
              (fc.options.scale_placement == attention::ScalePlacement::query ? " scale@q" : "") +
              " seed=" + std::to_string(fc.seed);
    cases.push_back(fc);
  }
  return cases;
}

struct BitComparison {
  std::size_t compared = 0;
  std::size_t mismatches = 0;
  std::size_t first_mismatch = 0;
  double cpu_value = 0, gpu_value = 0;
};

// Bit patterns, not values: -0 vs +0 and NaN payloads count as differences.
inline BitComparison compare_bits(const std::vector<double>& cpu, const std::vector<double>& gpu) {
  BitComparison r;
  if (cpu.size() != gpu.size()) {
    r.mismatches = std::max(cpu.size(), gpu.size());
    return r;
  }
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    ++r.compared;
    if (std::memcmp(&cpu[i], &gpu[i], sizeof(double)) != 0) {
      if (r.mismatches++ == 0) {
        r.first_mismatch = i;
        r.cpu_value = cpu[i];
        r.gpu_value = gpu[i];
      }
    }
  }
  return r;
}

// max |a - b|; NaN anywhere makes it NaN so a broken kernel never looks accurate.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return NAN;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    if (!(d == d) || std::isinf(d)) return NAN;
    m = std::max(m, d);
  }
  return m;
}

inline double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::fabs(x));
  return m;
}

// The floor of the flash2-tc rule: the output is rounded once to `format`, which alone moves it
// by up to u * |O|; two such units leave room for the fp32 accumulators' own error, nothing
// more. From the format's traits, never a typed-in epsilon.
inline double tc_floor(numerics::Format format, const std::vector<double>& golden) {
  return 2.0 * numerics::traits(format).unit_roundoff() * max_abs(golden);
}

struct TcCheck {
  std::string name;
  double tc_err = NAN, baseline_err = NAN, floor = NAN, bound = NAN;
  bool compared = false;
  bool pass = false;
  std::string status;  // run_cuda's status text when it did not run
};

// flash2-tc (kernel-<fmt>) vs the golden, against the emulator's same-format baseline
// (torch-math-<fmt>: the framework math path, the "naive same-dtype" implementation).
inline TcCheck check_tc(numerics::Format format, const attention::Shape& shape, bool causal,
                        int block_r, int block_c, std::uint64_t seed) {
  const std::string fmt = numerics::traits(format).name;
  TcCheck r;
  r.name = "flash2-tc kernel-" + fmt + " B=" + std::to_string(shape.batch) +
           " H=" + std::to_string(shape.heads) + " Nq=" + std::to_string(shape.seq_q) +
           " Nkv=" + std::to_string(shape.seq_kv) + " d=" + std::to_string(shape.head_dim) + " " +
           std::to_string(block_r) + "x" + std::to_string(block_c) + (causal ? " causal" : "") +
           " seed=" + std::to_string(seed);
  const attention::Inputs in = random_inputs(shape, seed, format);
  attention::Options opt;
  opt.causal = causal;
  opt.block_r = block_r;
  opt.block_c = block_c;
  const CudaRunResult tc =
      run_cuda(Kernel::flash2_tc, numerics::find_preset("kernel-" + fmt)->policy, in, opt);
  if (tc.status != RunStatus::ok) {
    r.status = tc.status_text();
    return r;
  }
  const attention::Output gold = attention::golden(in, opt);
  const attention::Output base = attention::run(
      attention::Algorithm::baseline, numerics::find_preset("torch-math-" + fmt)->policy, in, opt);
  r.compared = true;
  r.tc_err = max_abs_diff(tc.output.o.data, gold.o.data);
  r.baseline_err = max_abs_diff(base.o.data, gold.o.data);
  r.floor = tc_floor(format, gold.o.data);
  r.bound = 2.0 * r.baseline_err + r.floor;
  r.pass = r.tc_err <= r.bound;  // false for NaN
  r.status = "ok";
  return r;
}

}  // namespace attndev::cuda_check
