// The cases of the CUDA backend's acceptance checks, shared by the GPU test
// (test/cuda/gpu_kernels.cpp), the host tests of test/cuda and scripts/gpu-check.sh (through
// attndev_cuda_check). The rules themselves are lib/measure's named checks (measure/checks.hpp):
//   * faithful kernels and twins == attention::run on the CPU, bit for bit (bit_identical);
//   * flash2-tc: max|tc - golden| <= 2 * max|baseline(same format) - golden| + floor, the floor
//     one unit roundoff of the output format at the golden's scale (within_baseline_rule,
//     flash-attention's rule, docs/CONTRIBUTING.md #8).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "cuda/cuda_backend.hpp"
#include "inputs/random_inputs.hpp"
#include "measure/checks.hpp"
#include "measure/measure.hpp"
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

// ---- The run-level cuda backend's cases: inputs, golden, twins (test/cuda/test_device_path.cpp
// runs them through the host launch shim, the GPU test and `attndev_cuda_check device` on a GPU).

// A case of the twin product (conventions #14): odd sizes, N_q != N_kv both ways, tails.
struct TwinCase {
  const char* name;
  attention::Shape shape;
  int block_r, block_c;
  bool causal;
  attention::ScalePlacement placement;
  inputs::Distribution dist;

  attention::Options options() const {
    attention::Options o;
    o.block_r = block_r;
    o.block_c = block_c;
    o.causal = causal;
    o.scale_placement = placement;
    return o;
  }
};

inline const std::vector<TwinCase>& twin_cases() {
  using inputs::Distribution;
  static const std::vector<TwinCase> kCases = {
      {"odd N, Bc not dividing N, causal",
       {2, 1, 75, 75, 16},
       16,
       32,
       true,
       attention::ScalePlacement::scores,
       Distribution::normal(0.0, 1.0)},
      {"N_q > N_kv causal: fully masked rows, 5x7 tiles",
       {1, 2, 113, 40, 8},
       5,
       7,
       true,
       attention::ScalePlacement::scores,
       Distribution::uniform(-2.0, 1.0)},
      {"N_q < N_kv, odd d, scale in Q",
       {1, 1, 33, 130, 33},
       64,
       48,
       false,
       attention::ScalePlacement::query,
       Distribution{Distribution::Kind::outlier, 0, 1, 10, 0.05}},
      {"tiny, tiles of 1",
       {2, 2, 7, 1, 3},
       1,
       1,
       true,
       attention::ScalePlacement::scores,
       Distribution::normal(0.5, 2.0)},
  };
  return kCases;
}

// Every preset, and its unfused variant where the preset fuses: the policies of the twin product.
struct NamedPolicy {
  std::string name;
  numerics::PrecisionPolicy policy;
};
inline std::vector<NamedPolicy> twin_policies() {
  std::vector<NamedPolicy> out;
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets) {
    // A tensor-core profile ("mma", the quant-fp16-sm* presets) is host code: select_twin
    // refuses it on the device (its own test), so it has no device twin to compare.
    if (p.policy.mma != numerics::mma::Arch::none) continue;
    out.push_back({std::string(p.name), p.policy});
    if (p.policy.fma) {
      numerics::PrecisionPolicy unfused = p.policy;
      unfused.fma = false;
      out.push_back({std::string(p.name) + "+fma=false", unfused});
    }
  }
  return out;
}

// The distributions and formats the input kernel is checked on.
inline std::vector<inputs::Distribution> input_distributions() {
  using inputs::Distribution;
  return {Distribution::normal(0.0, 1.0),
          Distribution::normal(0.5, 2.0),
          Distribution::uniform(-3.0, 1.0),
          Distribution::uniform(0.0, 1.0),
          Distribution{Distribution::Kind::outlier, 0, 1, 10.0, 0.01},
          Distribution{Distribution::Kind::outlier, 0, 1, 1000.0, 0.5},
          Distribution{Distribution::Kind::channel, 1.0, 4.0, 10.0, 0.001}};
}
inline constexpr numerics::Format kInputFormats[] = {
    numerics::Format::bf16,    numerics::Format::fp16, numerics::Format::fp32,
    numerics::Format::tf32,    numerics::Format::fp64, numerics::Format::fp8_e4m3,
    numerics::Format::fp8_e5m2};

// Bit for bit, through lib/measure's named check (-0 vs +0 and NaN payloads differ).
using measure::BitComparison;
inline BitComparison compare_bits(const std::vector<double>& reference,
                                  const std::vector<double>& output) {
  return measure::compare_bits(reference, output);
}

// max |a - b| through lib/measure (NaN when an element of a is NaN or inf where b is finite).
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return NAN;
  return measure::deviation(a, b, /*reference_max_abs=*/0.0, numerics::Format::fp64).max_abs;
}

// Two roundings to `format` at the reference's scale (2 u max|ref|, non-finite elements left
// out): the host simulator's bound between flash2-tc and the emulated flash2, which differ before
// the output rounding only at fp32 level. Not the flash2-tc acceptance rule (check_tc).
inline double two_roundings(numerics::Format format, const std::vector<double>& reference) {
  return 2.0 * measure::max_rel_floor(format, measure::max_abs_finite(reference));
}

struct TcCheck {
  std::string name;
  measure::BaselineRule rule;  // the kernel's and the baseline's deviation, floor, bound
  bool compared = false;
  bool pass = false;
  std::string status;  // run_cuda's status text when it did not run; else the check's detail
};

// flash2-tc (kernel-<fmt>) against measure::within_baseline_rule: its deviation from the FP64
// golden within twice that of the emulator's same-format baseline (torch-math-<fmt>: the
// framework math path, the "naive same-dtype" implementation) plus one unit roundoff of the format
// at the golden's scale. Golden, deviations and floor are lib/measure's.
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
  const measure::Golden gold = measure::golden_of(in, opt);
  const attention::Output base = attention::run(
      attention::Algorithm::baseline, numerics::find_preset("torch-math-" + fmt)->policy, in, opt);
  r.rule = measure::baseline_rule(tc.output.o.data, base.o.data, gold, format);
  const measure::CheckResult check =
      measure::within_baseline_rule(tc.output.o.data, base.o.data, gold, format);
  r.compared = check.compared;
  r.pass = check.pass;
  r.status = check.detail;
  return r;
}

}  // namespace attndev::cuda_check
