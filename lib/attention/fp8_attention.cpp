// The fp8 algorithms, emulated: flash3-fp8 (FlashAttention-3's fp8 forward, Shah et al., 2024,
// Sec. 3.3 and Table 3) and its ablations, and baseline-fp8 (Table 3's fp8 baseline). They are
// flash2's and baseline's row functions (rows/flash2.hpp, rows/baseline.hpp) run on e4m3 Q, K, V
// with the Fp8Dequant hook (fp8_dequant.hpp), not copies of them.
//
// Preparation (prepare_fp8), from Q, K, V held in the policy's `input` format (fp16/bf16):
//   incoherent processing (optional, flash3): Q <- R_input((Q D) H / sqrt(d)), same for K,
//     computed in the score_accum format; V is not rotated (it meets P, not Q).
//   quantization: per block of Br rows of Q and of Bc rows of K and V (or one scale per tensor):
//     scale = R_fp32(amax / 448), x8 = e4m3_sat(R_fp32(x / scale)).
// flash3-fp8 is flash2 with three changes, where the kernel has them:
//   S_ij   = R_score(mul_in(score_accum, dot8(q_i, k_j), descale))
//            dot8 accumulated in score_accum (the fp8 wgmma accumulates in fp32);
//            descale = R_score_accum(scale_q(i) * scale_k(j)) (the two dequantization scales)
//   P_ij   = R_prob(p_ij): e4m3 under the fp8-e4m3 preset, the unnormalized p = exp2(...) in
//            [0, 1] cast without a scale, as the paper describes the fp8 forward: p < 2^-10
//            becomes 0 and p < 2^-6 keeps fewer than 3 fraction bits (e4m3 subnormals). FA-3's
//            released kernel does not do this: it offsets the exponent by Max_offset = 8, so P
//            lies in [0, 2^8] before the cast (hopper/softmax.h), and folds one descale per
//            (batch, head) into the softmax scale: that kernel is the fa3-fp8 recipe
//            (quant_recipes.hpp); flash3-fp8 keeps the paper's setting and its published numbers.
//   PV     = per K/V block, pv_t = sum_j P_ij V8_jt in out_accum (the block's mma), then
//            acc_t = mac(acc_t * alpha, pv_t, scale_v(block)): V's scale differs per block, so it
//            is applied to the block's product before it joins the running accumulator.
// The row max, l, alpha, the final 1/l and lse are flash2's, in the stats format.
//
// baseline-fp8 ("per-tensor scaling, with matmul accumulator in FP32 and intermediate softmax
// results in FP16") is baseline on per-tensor scaled e4m3 values with the scales applied where a
// scaled-fp8 GEMM applies them, in its fp32 epilogue:
//   S_ij = R_score(mul_in(score_accum, mul_in(score_accum, dot8(q_i, k_j), descale), scale))
//   O_it = R_output(mul_in(out_accum, sum_j P_ij V8_jt, scale_v))
// "Softmax in fp16" is the policy's business: configs/paper/fa3-table3.json sets score, stats
// and prob to fp16. Whether P then meets V as fp16 (V dequantized) or is re-quantized to e4m3
// the paper does not say; prob = fp16 is our default and prob = fp8-e4m3 is a one-stage change
// in the config (docs/reproduction.md compares both).
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/fp8_attention.hpp"
#include "attention/generic_rows.hpp"

namespace attndev::attention::detail {

namespace {

bool is_fp8_format(numerics::Format f) {
  return f == numerics::Format::fp8_e4m3 || f == numerics::Format::fp8_e5m2;
}

}  // namespace

void require_fp8_policy(Algorithm algorithm, const numerics::PrecisionPolicy& policy) {
  // FA-3's fp8 kernel and its per-tensor-scaled baseline are kernels: their block scales and
  // Hadamard steps have no framework-tensor counterpart in attndev.
  if (is_fp8_algorithm(algorithm) && policy.model == numerics::Model::framework)
    throw std::invalid_argument(std::string(algorithm_name(algorithm)) +
                                " models FA-3's fp8 kernel: the framework rounding model does "
                                "not apply; use a kernel-model policy such as fp8-e4m3");
}

Fp8Problem prepare_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options) {
  if (is_fp8_format(p.policy.input))
    throw std::invalid_argument(
        std::string(algorithm_name(algorithm)) +
        " quantizes Q, K, V to scaled e4m3 itself, so the policy's input stage must be the format "
        "the inputs are stored in before quantization (got " +
        numerics::format_name(p.policy.input) +
        "); use e.g. {\"base\": \"fp8-e4m3\", \"input\": \"fp16\"}");
  Fp8Problem f;
  f.p = &p;
  if (algorithm == Algorithm::baseline_fp8) {
    // FA-3's baseline: one scale per tensor, no rotation (Options::fp8 does not apply).
    f.q = fp8::quantize_per_tensor(p.q);
    f.k = fp8::quantize_per_tensor(p.k);
    f.v = fp8::quantize_per_tensor(p.v);
    return f;
  }
  const bool blocks = options.block_quantization && algorithm != Algorithm::flash3_fp8_per_tensor;
  const bool rotate =
      options.incoherent_processing && algorithm != Algorithm::flash3_fp8_no_hadamard;
  Tensor q = p.q;  // (B, H, N_q, d)
  Tensor k = p.k;  // (B, H, N_kv, d)
  if (rotate) {
    const std::vector<double> signs = fp8::random_signs(p.shape.head_dim, options.hadamard_seed);
    fp8::rotate_rows(q, signs, p.policy.score_accum, p.policy.input);
    fp8::rotate_rows(k, signs, p.policy.score_accum, p.policy.input);
  }
  f.q = blocks ? fp8::quantize_blocks(q, p.block_r) : fp8::quantize_per_tensor(q);
  f.k = blocks ? fp8::quantize_blocks(k, p.block_c) : fp8::quantize_per_tensor(k);
  f.v = blocks ? fp8::quantize_blocks(p.v, p.block_c) : fp8::quantize_per_tensor(p.v);
  return f;
}

void run_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options, FastKind kind,
             Output& out) {
  const Fp8Problem f = prepare_fp8(algorithm, p, options);
  if (kind != FastKind::none) {
    run_fp8_fast(algorithm, f, kind, out);
    return;
  }
  const bool baseline = algorithm == Algorithm::baseline_fp8;
  const int rows = baseline ? kBaselineRowBlock : p.block_r;
  const std::size_t items = row_block_count(p.shape, rows);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const RowBlock rb = row_block(p.shape, rows, item);
    const Fp8Dequant dequant{f.q.view(), f.k.view(), f.v.view(), rb.b, rb.h};
    if (baseline) {
      baseline_generic_rows(p, f.q.values, f.k.values, f.v.values, dequant, rb, out);
    } else {
      flash2_generic_rows(p, f.q.values, f.k.values, f.v.values, dequant, rb, out);
    }
  });
}

}  // namespace attndev::attention::detail
