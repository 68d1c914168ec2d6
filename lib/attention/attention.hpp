// The CPU attention emulator: one entry point over every algorithm and precision policy.
//
// Nothing here knows about configs or the CLI (see docs/CONTRIBUTING.md #5): callers hand in
// tensors, a policy and options; the result is the output tensor (and the log-sum-exp where the
// algorithm produces one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attention/rows/mask.hpp"
#include "numerics/policy.hpp"

namespace attndev::attention {

struct Mask;  // attention/mask.hpp

enum class Algorithm : unsigned char {
  baseline,
  flash1,
  flash2,
  // fp8 algorithms (FA-3 Table 3; lib/attention/fp8_attention.cpp): they quantize
  // Q, K, V to scaled e4m3 themselves, from inputs held in the policy's `input` format.
  flash3_fp8,              // block quantization and incoherent processing as Options::fp8 says
  flash3_fp8_per_tensor,   // flash3_fp8 without block quantization (one scale per tensor)
  flash3_fp8_no_hadamard,  // flash3_fp8 without incoherent processing (no Hadamard rotation)
  baseline_fp8,  // per-tensor scaled e4m3 Q, K, V; the rest as `baseline` under the policy
  // Emulated twins of GPU kernels, operation by operation (lib/attention/twins/): each runs
  // its kernel's fixed policy and tiles, with the policy's tensor-core profile (mma).
  flash2_tc_twin,  // attndev's own flash2-tc (lib/cuda/flash2_tc.cuh)
  // FlashAttention-2's CUDA forward (Dao-AILab/flash-attention csrc/flash_attn/src/), the exp2
  // argument one FFMA as upstream builds it, or FMUL then FADD (UNFUSE_FMA) as PyTorch's
  // SDPBackend.FLASH_ATTENTION builds it; PyTorch's memory-efficient kernel
  // (SDPBackend.EFFICIENT_ATTENTION). lib/attention/twins/{fa2_cuda,mem_efficient}.hpp.
  fa2_cuda,
  fa2_cuda_unfused,
  mem_efficient,
  // Quantized attention recipes (lib/attention/quant_recipes.hpp): each quantizes Q, K, V (and
  // P) by its source's rules, from inputs held in the policy's `input` format, and runs its
  // GEMMs on the policy's tensor-core profile (mma).
  fa3_fp8,                    // FlashAttention-3's released fp8 kernel
  fa3_fp8_paper,              // FA-3's paper setting (flash3-fp8's rules) on a tensor-core profile
  fa3_fp8_paper_per_tensor,   // ... without block quantization
  fa3_fp8_paper_no_hadamard,  // ... without incoherent processing
  sage1,                      // SageAttention: INT8 QK per block, fp16 P V
  sage2_8b,                   // SageAttention2: INT8 QK per thread, FP8 P V, two-level
  sage2_4b,                   // SageAttention2: INT4 QK per thread with Q smoothing
  sage2pp,                    // SageAttention2++: fp16-accumulated FP8 P V, V scale max 2.25
  sage3,                      // SageAttention3: NVFP4 Q, K, V and two-level P
  mxfp8,                      // MXFP8: e4m3 blocks of 32 with e8m0 scales on Q, K, V and P
};

inline constexpr Algorithm kAllAlgorithms[] = {Algorithm::baseline, Algorithm::flash1,
                                               Algorithm::flash2};

// Kept apart from kAllAlgorithms, whose members compute exactly what the policy says (tests over
// kAllAlgorithms expect exact answers under exact policies); the fp8 algorithms always quantize
// to e4m3 with real-valued scales, whatever the policy. parse_algorithm accepts both lists.
inline constexpr Algorithm kFp8Algorithms[] = {
    Algorithm::flash3_fp8, Algorithm::flash3_fp8_per_tensor, Algorithm::flash3_fp8_no_hadamard,
    Algorithm::baseline_fp8};

// The twins of GPU kernels: like the fp8 algorithms, kept out of kAllAlgorithms (they run their
// kernel's policy only, not any policy exactly).
inline constexpr Algorithm kTwinAlgorithms[] = {Algorithm::flash2_tc_twin, Algorithm::fa2_cuda,
                                                Algorithm::fa2_cuda_unfused,
                                                Algorithm::mem_efficient};

// The quantized recipes: like the fp8 algorithms, they quantize with real-valued scales whatever
// the policy (its input, output and mma are what they read).
inline constexpr Algorithm kQuantAlgorithms[] = {Algorithm::fa3_fp8,
                                                 Algorithm::fa3_fp8_paper,
                                                 Algorithm::fa3_fp8_paper_per_tensor,
                                                 Algorithm::fa3_fp8_paper_no_hadamard,
                                                 Algorithm::sage1,
                                                 Algorithm::sage2_8b,
                                                 Algorithm::sage2_4b,
                                                 Algorithm::sage2pp,
                                                 Algorithm::sage3,
                                                 Algorithm::mxfp8};

// Every algorithm a user can name (listings, config validation, suggestions).
inline constexpr Algorithm kEveryAlgorithm[] = {Algorithm::baseline,
                                                Algorithm::flash1,
                                                Algorithm::flash2,
                                                Algorithm::flash3_fp8,
                                                Algorithm::flash3_fp8_per_tensor,
                                                Algorithm::flash3_fp8_no_hadamard,
                                                Algorithm::baseline_fp8,
                                                Algorithm::flash2_tc_twin,
                                                Algorithm::fa2_cuda,
                                                Algorithm::fa2_cuda_unfused,
                                                Algorithm::mem_efficient,

                                                Algorithm::fa3_fp8,
                                                Algorithm::fa3_fp8_paper,
                                                Algorithm::fa3_fp8_paper_per_tensor,
                                                Algorithm::fa3_fp8_paper_no_hadamard,
                                                Algorithm::sage1,
                                                Algorithm::sage2_8b,
                                                Algorithm::sage2_4b,
                                                Algorithm::sage2pp,
                                                Algorithm::sage3,
                                                Algorithm::mxfp8};

inline constexpr bool is_fp8_algorithm(Algorithm a) {
  return a == Algorithm::flash3_fp8 || a == Algorithm::flash3_fp8_per_tensor ||
         a == Algorithm::flash3_fp8_no_hadamard || a == Algorithm::baseline_fp8;
}

inline constexpr bool is_twin_algorithm(Algorithm a) {
  return a == Algorithm::flash2_tc_twin || a == Algorithm::fa2_cuda ||
         a == Algorithm::fa2_cuda_unfused || a == Algorithm::mem_efficient;
}

inline constexpr bool is_quant_algorithm(Algorithm a) {
  return static_cast<int>(a) >= static_cast<int>(Algorithm::fa3_fp8) &&
         static_cast<int>(a) <= static_cast<int>(Algorithm::mxfp8);
}

const char* algorithm_name(Algorithm a);
bool parse_algorithm(std::string_view text, Algorithm& out);
const char* algorithm_description(Algorithm a);

// Where the softmax scale is applied: to the scores S = (QK^T) * scale (what FA kernels do), or
// folded into Q before the first matmul (Q' = round_input(Q * scale), as some frameworks do).
enum class ScalePlacement : unsigned char { scores, query };

struct Shape {
  int batch = 1;
  int heads = 1;
  int seq_q = 0;
  int seq_kv = 0;
  int head_dim = 0;
};

// b * h * n * d as an element count. Throws std::length_error when the product overflows (it
// would wrap to a short buffer that the algorithms then write past) and std::invalid_argument for
// a negative extent.
inline std::size_t checked_elements(int b, int h, int n, int d) {
  if (b < 0 || h < 0 || n < 0 || d < 0)
    throw std::invalid_argument("tensor extents must be >= 0, got (" + std::to_string(b) + ", " +
                                std::to_string(h) + ", " + std::to_string(n) + ", " +
                                std::to_string(d) + ")");
  std::size_t count = 1;
  for (int extent : {b, h, n, d})
    if (__builtin_mul_overflow(count, static_cast<std::size_t>(extent), &count) ||
        count > std::vector<double>().max_size())
      throw std::length_error("a tensor of " + std::to_string(b) + " x " + std::to_string(h) +
                              " x " + std::to_string(n) + " x " + std::to_string(d) +
                              " elements is larger than any memory (the size overflows)");
  return count;
}

// A (B, H, N, D) tensor, row-major, values held as double. Values are exactly representable in
// whatever format the producer rounded them to (inputs: the policy's `input` format).
struct Tensor {
  int batch = 0, heads = 0, rows = 0, cols = 0;
  std::vector<double> data;

  Tensor() = default;
  Tensor(int b, int h, int n, int d)
      : batch(b), heads(h), rows(n), cols(d), data(checked_elements(b, h, n, d)) {}
  std::size_t index(int b, int h, int n, int d) const {
    return ((static_cast<std::size_t>(b) * heads + h) * rows + n) * cols + d;
  }
  double& at(int b, int h, int n, int d) { return data[index(b, h, n, d)]; }
  double at(int b, int h, int n, int d) const { return data[index(b, h, n, d)]; }
  // First element of the (rows, cols) matrix of batch b, head h.
  const double* head_ptr(int b, int h) const { return data.data() + index(b, h, 0, 0); }
  double* head_ptr(int b, int h) { return data.data() + index(b, h, 0, 0); }
};

struct Inputs {
  Tensor q;  // (B, H, N_q, d)
  Tensor k;  // (B, H, N_kv, d)
  Tensor v;  // (B, H, N_kv, d)
  Shape shape() const { return {q.batch, q.heads, q.rows, k.rows, q.cols}; }
};

struct Options {
  bool causal = false;
  ScalePlacement scale_placement = ScalePlacement::scores;
  std::optional<double> scale;  // default 1/sqrt(d)
  int block_r = 64;             // Br: rows of Q per tile (flash algorithms)
  int block_c = 64;             // Bc: rows of K/V per tile (flash algorithms)
  int threads = 0;              // 0: all hardware threads
  // Which implementation runs. `automatic` takes a fast path (float or double SIMD) where one
  // exists for the policy; `generic` forces the reference path through numerics' *_in functions.
  // Both are bit-identical by contract (test/attention/test_fast_path.cpp); the switch exists so
  // that the contract can be tested and a suspected fast-path bug bisected.
  enum class Path : unsigned char { automatic, generic } path = Path::automatic;
  // 0: work items (batch, head, Q-block) are handed to threads in order; otherwise in an order
  // shuffled by this seed. Results never depend on it (each row is computed by one thread in a
  // fixed order); it exists to test exactly that.
  std::uint64_t schedule_seed = 0;
  // A mask beyond the causal one (key padding, attention masks, additive biases, as PyTorch's
  // SDPA takes them; attention/mask.hpp), for every algorithm of the CPU emulator's forward
  // pass. Null: none. Built with attention/mask.hpp.
  std::shared_ptr<const Mask> mask;
  // The fp8 algorithms only (kFp8Algorithms); the ablation algorithms override the first two.
  struct Fp8 {
    // Per-block scales (Br x d for Q, Bc x d for K and V) instead of one scale per tensor.
    bool block_quantization = true;
    // Q and K multiplied by M = D H / sqrt(d) before quantization (D: random +-1 diagonal from
    // hadamard_seed, H: Hadamard); QK^T is unchanged in exact arithmetic. Needs d a power of 2.
    bool incoherent_processing = true;
    std::uint64_t hadamard_seed = 0x6a09e667f3bcc908ull;
  } fp8;
};

// Causal masking aligns the bottom-right corners (FlashAttention >= 2.1): query row i may see key
// column j iff j <= i + (N_kv - N_q). With N_q > N_kv the first rows see no key at all; such
// fully masked rows output 0 (never NaN) and have lse = -inf. The rule is defined once, in
// rows/mask.hpp, for every algorithm and backend.
using rows::causal_visible;

// What one quantized stage of a recipe did (attention/quantize.hpp's Stats, summed over the
// tensor): the share of saturated elements and the stage's own quantization error, so that a
// row says how much of the deviation the quantizer caused.
struct QuantStageReport {
  std::string stage;  // "q", "k", "v", "p"
  std::size_t elements = 0, saturated = 0, groups = 0, zero_scales = 0, nonfinite_scales = 0;
  double rel_rmse = 0.0;  // ||dequantized - x|| / ||x|| over the stage's elements
};

struct Output {
  Tensor o;                 // (B, H, N_q, d), values in the policy's `output` format
  std::vector<double> lse;  // (B, H, N_q) log-sum-exp of the scaled scores (natural log);
                            // empty for algorithms that do not produce it
  std::vector<QuantStageReport> quant = {};  // the quantized recipes' stages; empty otherwise
};

// Throws std::invalid_argument with a message naming the bad field for impossible arguments
// (tile < 1, mismatched shapes, d < 1, ...; attention::validate in problem.hpp).
Output run(Algorithm algorithm, const numerics::PrecisionPolicy& policy, const Inputs& inputs,
           const Options& options);

// Empty when run() computes (algorithm, policy, shape); else why it cannot, as a skipped row says
// it: a twin asked for a head dim or a policy its kernel does not have, a tensor-core profile
// with an algorithm that has no tensor-core GEMMs here. run() throws std::invalid_argument with
// the same text. (A policy whose profile does not take its formats is a bad policy, refused by
// numerics::mma_policy_error when it is parsed, and by run() as well.)
// The quantized recipes also check the tiles (block_r, block_c) their block shapes must tile.
std::string unsupported_reason(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                               const Shape& shape, int block_r = 64, int block_c = 64);

// The paper and code a quantized recipe's rules come from; empty for the other algorithms.
const char* algorithm_source(Algorithm a);

// flash2-tc-twin with its exp2 replaced (lib/attention/twins/flash2_tc.hpp): exp2(x) for every
// exp2f of the kernel; an empty function is run()'s default, numerics::exp2_f32.
Output run_flash2_tc_twin(const numerics::PrecisionPolicy& policy, const Inputs& inputs,
                          const Options& options, const std::function<float(float)>& exp2);

// The FP64 golden: `baseline` under the fp64 policy (same code, not a second formula).
Output golden(const Inputs& inputs, const Options& options);

// Name of the implementation run() would use: "generic", "fast-f32" (kernel model: fp32
// accumulators, stats fp32/tf32/bf16/fp16, storage stages any format up to fp32; framework model:
// no stage fp64) or "fast-f64" (every stage fp64, or kernel-model fp64 accumulators with stats
// fp64/tf32/bf16/fp16 and storage stages of any format). detail::fast_kind decides both this
// answer and the dispatch, so they cannot disagree (docs/CONTRIBUTING.md #6).
const char* kernel_path(Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                        const Options& options);

// FLOPs of one attention forward pass (4 * B * H * N_q * N_kv * d, halved-ish when causal:
// counts only the visible (i, j) pairs), for throughput figures.
double forward_flops(const Shape& shape, bool causal);

}  // namespace attndev::attention
