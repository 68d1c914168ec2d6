// `attndev match`: which emulated kernel explains an output some implementation produced?
//
// Given Q, K, V and the O an implementation computed from them, every candidate (algorithm x
// precision policy x tile size) runs on the same inputs and is compared with O element by
// element: the share of bit-identical elements, ulps in the candidate's output format, and
// |O - O_candidate|. The ranking (identical fraction first, then mean |O - O_candidate|) names the
// policy that explains the output, and how well: a kernel that rounds where the candidate rounds
// agrees bit for bit almost everywhere; one that merely has the same accuracy shares few
// elements. This is the tool a kernel engineer points at their kernel.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/run/status.hpp"
#include "metrics/deviation.hpp"
#include "metrics/ulp.hpp"

namespace attndev::experiment {

struct MatchCandidate {
  Variant variant;  // a cpu variant; block_r/block_c set for tiled algorithms
};

struct MatchResult {
  MatchCandidate candidate;
  Status status;
  metrics::UlpComparison ulps;    // candidate vs the given output, in the policy's output format
  metrics::Deviation difference;  // |O - O_candidate|
  // max |O - O_candidate| in ulps of the output format at max |O|. ulps.max_ulp counts the
  // representable values between two elements, which near zero (where a format is dense: bf16
  // has fp32's exponent range) runs into the tens of thousands for differences that are round-off
  // at the output's scale; this is the size of the worst difference relative to the output.
  double max_diff_ulps_at_max = 0;
  metrics::Deviation candidate_dev;  // candidate vs the FP64 golden
  metrics::Deviation output_dev;     // the given output vs the same golden (same input rounding)
};

struct MatchOptions {
  attention::Options options;  // causal, scale placement, threads (tiles: the candidates')
  std::function<void(std::size_t done, std::size_t total)> on_progress;
};

// Formats among fp64, fp32, tf32, fp16, bf16 that represent every finite value of `o` exactly
// (an output stored in bf16 also fits fp32: both are listed, narrowest last).
std::vector<numerics::Format> formats_holding(const attention::Tensor& o);

// algorithms x policies x tiles. Baseline has no tiles (one candidate per policy); each tiled
// algorithm runs every (br, bc). Names read "flash2 kernel-bf16 Bc=64". Twin algorithms
// (attention::is_twin_algorithm) take their kernel's tiles: one candidate per policy.
std::vector<MatchCandidate> make_candidates(const std::vector<attention::Algorithm>& algorithms,
                                            const std::vector<numerics::PrecisionPolicy>& policies,
                                            const std::vector<int>& block_r,
                                            const std::vector<int>& block_c);

// The twins of the GPU kernels (fa2-cuda, fa2-cuda-unfused, mem-efficient, flash2-tc-twin) and the
// tensor-core profiles match searches by default.
std::vector<attention::Algorithm> default_twin_algorithms();
std::vector<numerics::mma::Arch> default_twin_profiles();

// Twin candidates: each twin x each policy a twin runs (among `policies`, those of the kernels:
// kernel-bf16 / kernel-fp16 formats, no tensor-core profile of their own) x each profile, the
// profile set as the policy's "mma". Names read "fa2-cuda kernel-bf16+mma=sm90".
std::vector<MatchCandidate> make_twin_candidates(
    const std::vector<attention::Algorithm>& twins,
    const std::vector<numerics::PrecisionPolicy>& policies,
    const std::vector<numerics::mma::Arch>& profiles);

// Every candidate a search runs, `attndev match`'s and Python's attndev.match alike:
// make_candidates over `algorithms`, then make_twin_candidates (empty `twins`: none).
std::vector<MatchCandidate> search_candidates(
    const std::vector<attention::Algorithm>& algorithms,
    const std::vector<numerics::PrecisionPolicy>& policies, const std::vector<int>& block_r,
    const std::vector<int>& block_c, const std::vector<attention::Algorithm>& twins,
    const std::vector<numerics::mma::Arch>& profiles);

// The default policies for an output: the presets (fp8 ones aside) whose output format holds
// every value of `o`, and for bf16/fp16 also "fp32 arithmetic with working-format inputs and
// output" (what PyTorch's SDPA math backend computes since 2.5: it upcasts).
std::vector<numerics::PrecisionPolicy> default_policies(const attention::Tensor& o);

// Runs every candidate (inputs rounded to its input format, as a sweep does) and ranks them:
// most bit-identical elements first, then the smallest mean |O - O_candidate|; candidates that
// did not run last. `output` must have Q's shape (B, H, N_q, d).
std::vector<MatchResult> match_output(const attention::Tensor& output,
                                      const attention::Inputs& inputs,
                                      const std::vector<MatchCandidate>& candidates,
                                      const MatchOptions& options);

// ulp(x) of `format` for |x| in its normal range: 2^(floor(log2 |x|) - fraction bits); below
// it the subnormal spacing. 0 for x = 0.
double ulp_of(double x, numerics::Format format);

// One sentence: which candidate explains the output and how well (or that none does).
std::string match_verdict(const std::vector<MatchResult>& ranked);

}  // namespace attndev::experiment
