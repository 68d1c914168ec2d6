// The one place where runtime choices (kernel, formats, head dim, Br, Bc) become template
// parameters, and where "is this supported?" is answered (docs/CONTRIBUTING.md #6). Both questions
// go through select(): the launcher passes a visitor that launches the chosen instantiation, the
// capability answer passes a visitor that does nothing. They cannot disagree.
//
// Plain C++ (no CUDA header): the host-only unit test includes it in every build.
#pragma once

#include <string>
#include <tuple>
#include <utility>

#include "attention/attention.hpp"
#include "cuda/cuda_backend.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda {

// ---- Tags handed to the visitor: compile-time descriptions of one kernel instantiation. ----

// Faithful scalar kernels: one instantiation each, every policy and tile handled at run time
// (they compute in double through lib/numerics, exactly as the emulator does).
template <attention::Algorithm A>
struct FaithfulTag {
  static constexpr attention::Algorithm kAlgorithm = A;
};

// Element type of the matrix-unit operands.
enum class MatElement : unsigned char { bf16, fp16, fp32, tf32, fp64 };

inline const char* mat_element_name(MatElement e) {
  switch (e) {
    case MatElement::bf16:
      return "bf16";
    case MatElement::fp16:
      return "fp16";
    case MatElement::fp32:
      return "fp32";
    case MatElement::tf32:
      return "tf32";
    case MatElement::fp64:
      return "fp64";
  }
  return "?";
}

// cuBLAS baseline: operand type of both GEMMs. bf16/fp16 accumulate in fp32; fp32 computes in
// fp32 with TF32 off; tf32 lets cuBLAS use TF32 tensor cores; fp64 is DGEMM.
template <MatElement E>
struct BaselineTag {
  static constexpr MatElement kElement = E;
};

// flash2-tc kernel traits: a (format, head dim, Br, Bc) instantiation. Four warps; each owns
// kMTiles m16 slices of query rows (mma.m16n8k16's m), so that every K/V fragment read from
// shared memory feeds kMTiles mma (FA-2's split of a 128-row tile: two slices per warp).
template <MatElement E, int HeadDim, int BlockM, int BlockN>
struct TcTag {
  static constexpr MatElement kElement = E;
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kWarps = 4;
  static constexpr int kMTiles = BlockM / (16 * kWarps);
  static constexpr int kThreads = 32 * kWarps;
  static_assert(E == MatElement::bf16 || E == MatElement::fp16, "mma.sync m16n8k16 operands");
  static_assert(HeadDim % 16 == 0, "head dim is the k extent of the QK^T mma (k16 steps)");
  static_assert(BlockM % (16 * kWarps) == 0, "each warp owns whole 16-row m16 slices");
  static_assert(BlockN % 16 == 0, "P's k16 steps in the PV mma span two n8 score tiles");
};

// flash2-tc's grid is (Q blocks, batch x head): CUDA limits gridDim.y to 65535.
inline constexpr long long kTcMaxBatchHeads = 65535;

// The flash2-tc instantiation table. Adding a row here is all it takes to support a tile.
// 128x64 is FA-2's forward tile for d <= 128 on sm_80+; 64x64 is the small-shape / low-register
// alternative.
using TcTable =
    std::tuple<TcTag<MatElement::bf16, 64, 64, 64>, TcTag<MatElement::bf16, 64, 128, 64>,
               TcTag<MatElement::bf16, 128, 64, 64>, TcTag<MatElement::bf16, 128, 128, 64>,
               TcTag<MatElement::fp16, 64, 64, 64>, TcTag<MatElement::fp16, 64, 128, 64>,
               TcTag<MatElement::fp16, 128, 64, 64>, TcTag<MatElement::fp16, 128, 128, 64>>;

// ---- Selection ----

struct Selection {
  bool supported = false;
  std::string reason;  // why not, when !supported
};

namespace detail {

inline std::string fmt_name(numerics::Format f) {
  return numerics::traits(f).name;
}

inline Selection unsupported(Kernel k, const std::string& why) {
  return {false, std::string(kernel_name(k)) + ": " + why};
}

template <class Tuple, class F, std::size_t... I>
bool for_first_match(F&& f, std::index_sequence<I...>) {
  return (f(std::tuple_element_t<I, Tuple>{}) || ...);
}

// The tile list of the table for an element type and head dim, for the "have ..." hint.
inline std::string tc_tiles_for(MatElement e, int d) {
  std::string out;
  for_first_match<TcTable>(
      [&](auto tag) {
        using T = decltype(tag);
        if (T::kElement == e && T::kHeadDim == d) {
          if (!out.empty()) out += ", ";
          out += std::to_string(T::kBlockM) + "x" + std::to_string(T::kBlockN);
        }
        return false;
      },
      std::make_index_sequence<std::tuple_size_v<TcTable>>{});
  return out;
}

}  // namespace detail

// Chooses the instantiation for (kernel, policy, shape, options) and calls visit(tag) with it.
// Returns what happened; visit is not called when the combination is unsupported.
template <class Visit>
Selection select(Kernel kernel, const numerics::PrecisionPolicy& p, const attention::Shape& shape,
                 const attention::Options& options, Visit&& visit) {
  using numerics::Format;
  if (options.mask)
    return detail::unsupported(kernel,
                               "masks beyond the causal one (attention/mask.hpp) run on the "
                               "emulator only; use the emulator");
  if (p.softmax != numerics::SoftmaxForm::fa2)
    return detail::unsupported(
        kernel, std::string("the softmax form ") + numerics::softmax_form_name(p.softmax) +
                    " (PyTorch's CPU kernel) runs on the emulator's generic path "
                    "only; use the emulator");
  if (p.mma != numerics::mma::Arch::none)
    return detail::unsupported(
        kernel, std::string("the tensor-core model (\"mma\": \"") +
                    numerics::mma::arch_name(p.mma) +
                    "\") runs on the emulator only; the GPU's own tensor cores are what a CUDA "
                    "kernel measures");
  switch (kernel) {
    case Kernel::flash1:
      visit(FaithfulTag<attention::Algorithm::flash1>{});
      return {true, {}};
    case Kernel::flash2:
      visit(FaithfulTag<attention::Algorithm::flash2>{});
      return {true, {}};

    case Kernel::baseline: {
      if (p.model != numerics::Model::kernel)
        return detail::unsupported(kernel,
                                   "the framework model (each op in fp32, its output stored) "
                                   "has no cuBLAS equivalent here; use the emulator or the "
                                   "faithful kernels");
      if (!p.fma)
        return detail::unsupported(kernel,
                                   "fma=false (separately rounded products) has no "
                                   "cuBLAS equivalent; use the emulator");
      // Both GEMMs read one element type: Q, K, V in `input` and P in `prob` must share it.
      if (p.prob != p.input && !(p.input == Format::tf32 && p.prob == Format::fp32) &&
          !(p.input == Format::fp32 && p.prob == Format::tf32))
        return detail::unsupported(kernel, "prob (" + detail::fmt_name(p.prob) +
                                               ") must equal input (" + detail::fmt_name(p.input) +
                                               "): P is the second GEMM's operand");
      if (p.score_accum != p.out_accum)
        return detail::unsupported(kernel,
                                   "score_accum and out_accum must match (one cuBLAS "
                                   "compute type for both GEMMs)");
      const Format acc = p.score_accum;
      switch (p.input) {
        case Format::bf16:
        case Format::fp16:
          if (acc != Format::fp32)
            return detail::unsupported(kernel, detail::fmt_name(p.input) +
                                                   " GEMMs accumulate in fp32, policy asks " +
                                                   detail::fmt_name(acc));
          if (p.input == Format::bf16)
            visit(BaselineTag<MatElement::bf16>{});
          else
            visit(BaselineTag<MatElement::fp16>{});
          return {true, {}};
        case Format::fp32:
        case Format::tf32:
          if (acc == Format::tf32 || p.input == Format::tf32) {
            if (acc != Format::fp32 && acc != Format::tf32)
              return detail::unsupported(kernel, "tf32 GEMMs accumulate in fp32");
            visit(BaselineTag<MatElement::tf32>{});
            return {true, {}};
          }
          if (acc != Format::fp32)
            return detail::unsupported(
                kernel, "fp32 GEMMs accumulate in fp32, policy asks " + detail::fmt_name(acc));
          visit(BaselineTag<MatElement::fp32>{});
          return {true, {}};
        case Format::fp64:
          if (acc != Format::fp64)
            return detail::unsupported(
                kernel, "fp64 GEMMs accumulate in fp64, policy asks " + detail::fmt_name(acc));
          visit(BaselineTag<MatElement::fp64>{});
          return {true, {}};
        default:
          return detail::unsupported(kernel, "no cuBLAS GEMM for " + detail::fmt_name(p.input) +
                                                 " inputs (fp8 baseline runs on the emulator)");
      }
    }

    case Kernel::flash2_tc: {
      if (p.input != Format::bf16 && p.input != Format::fp16)
        return detail::unsupported(
            kernel, "inputs must be bf16 or fp16, policy has " + detail::fmt_name(p.input));
      // The kernel's precision is fixed by its structure: the kernel-bf16/kernel-fp16 policy.
      const bool kernel_policy = p.score_accum == Format::fp32 && p.score == Format::fp32 &&
                                 p.stats == Format::fp32 && p.out_accum == Format::fp32 &&
                                 p.prob == p.input && p.output == p.input && p.fma &&
                                 p.model == numerics::Model::kernel;
      if (!kernel_policy)
        return detail::unsupported(
            kernel, "only the kernel-" + detail::fmt_name(p.input) +
                        " policy (fp32 score/stats/accumulators, prob and output in the input "
                        "format, fused mma); use the faithful flash2 for other policies");
      const long long batch_heads = static_cast<long long>(shape.batch) * shape.heads;
      if (batch_heads > kTcMaxBatchHeads)
        return detail::unsupported(kernel, "batch x heads = " + std::to_string(batch_heads) +
                                               " exceeds the grid's limit of " +
                                               std::to_string(kTcMaxBatchHeads) +
                                               " (CUDA gridDim.y); split the batch");
      const MatElement e = p.input == Format::bf16 ? MatElement::bf16 : MatElement::fp16;
      const int d = shape.head_dim;
      const bool found = detail::for_first_match<TcTable>(
          [&](auto tag) {
            using T = decltype(tag);
            if (T::kElement != e || T::kHeadDim != d || T::kBlockM != options.block_r ||
                T::kBlockN != options.block_c)
              return false;
            visit(tag);
            return true;
          },
          std::make_index_sequence<std::tuple_size_v<TcTable>>{});
      if (found) return {true, {}};
      const std::string tiles = detail::tc_tiles_for(e, d);
      if (tiles.empty())
        return detail::unsupported(
            kernel, "head_dim " + std::to_string(d) + " not instantiated (have 64, 128)");
      return detail::unsupported(kernel, "tile Br x Bc = " + std::to_string(options.block_r) + "x" +
                                             std::to_string(options.block_c) +
                                             " not instantiated for head_dim " + std::to_string(d) +
                                             " (have " + tiles + ")");
    }
  }
  return detail::unsupported(kernel, "unknown kernel");
}

// The emulated twin of an algorithm on the device (the run-level cuda backend): the faithful
// kernels run the emulator's row functions in PolicyArith, so every algorithm and every policy the
// row functions model runs there as it runs on the CPU: kernel and framework models, fused or not,
// every format and softmax form; the fp8 algorithms with the host's own quantization (prepare_fp8)
// and the Fp8Dequant hook on the device. What the device does not carry is refused here with the
// reason (`return refuse("...")`), so that the answer and the launch cannot disagree, and a run
// that names such a variant is refused before anything runs, never run some other way: today the
// tensor-core profiles ("mma"), the twins of the CUDA kernels (lib/attention/twins) and the
// quantized recipes, all host code. A policy field or algorithm joins the device path by being
// ATTNDEV_HD and read inside the row functions, and by leaving this list.
template <class Visit>
Selection select_twin(attention::Algorithm algorithm, const numerics::PrecisionPolicy& p,
                      const attention::Shape& /*shape*/, const attention::Options& /*options*/,
                      Visit&& visit) {
  using attention::Algorithm;
  const auto refuse = [&](const std::string& why) {
    return Selection{false, std::string(attention::algorithm_name(algorithm)) +
                                " on the cuda backend: " + why +
                                "; run this variant with --backend cpu"};
  };
  // The tensor-core profiles (policy "mma", numerics/mma.hpp): the CPU's generic path runs their
  // dot products through rows/tc_gemm.hpp's host function pointers, which the faithful kernels
  // do not carry; run as ScalarKernels they would give other bits.
  if (p.mma != numerics::mma::Arch::none)
    return refuse(std::string("the tensor-core profile \"mma\": \"") +
                  numerics::mma::arch_name(p.mma) +
                  "\" is not modelled on the device yet (its dot products are host code)");
  switch (algorithm) {
    case Algorithm::baseline:
      visit(FaithfulTag<Algorithm::baseline>{});
      return {true, {}};
    case Algorithm::flash1:
      visit(FaithfulTag<Algorithm::flash1>{});
      return {true, {}};
    case Algorithm::flash2:
      visit(FaithfulTag<Algorithm::flash2>{});
      return {true, {}};
    case Algorithm::flash3_fp8:
      visit(FaithfulTag<Algorithm::flash3_fp8>{});
      return {true, {}};
    case Algorithm::flash3_fp8_per_tensor:
      visit(FaithfulTag<Algorithm::flash3_fp8_per_tensor>{});
      return {true, {}};
    case Algorithm::flash3_fp8_no_hadamard:
      visit(FaithfulTag<Algorithm::flash3_fp8_no_hadamard>{});
      return {true, {}};
    case Algorithm::baseline_fp8:
      visit(FaithfulTag<Algorithm::baseline_fp8>{});
      return {true, {}};
    // The twins of the real CUDA kernels (lib/attention/twins/): their own loops, host code.
    case Algorithm::flash2_tc_twin:
    case Algorithm::fa2_cuda:
    case Algorithm::fa2_cuda_unfused:
    case Algorithm::mem_efficient:
      return refuse("the twins of the CUDA kernels (lib/attention/twins) run on the host only");
    // The quantized recipes (lib/attention/quant_recipes.hpp): their quantizers and their
    // dot-adds on the tensor-core profiles are host code.
    case Algorithm::fa3_fp8:
    case Algorithm::fa3_fp8_paper:
    case Algorithm::fa3_fp8_paper_per_tensor:
    case Algorithm::fa3_fp8_paper_no_hadamard:
    case Algorithm::sage1:
    case Algorithm::sage2_8b:
    case Algorithm::sage2_4b:
    case Algorithm::sage2pp:
    case Algorithm::sage3:
    case Algorithm::mxfp8:
      return refuse("the quantized recipes (lib/attention/quant_recipes.hpp) run on the host only");
  }
  return refuse("unknown algorithm");
}

inline Selection check_twin_supported(attention::Algorithm algorithm,
                                      const numerics::PrecisionPolicy& policy,
                                      const attention::Shape& shape,
                                      const attention::Options& options) {
  return select_twin(algorithm, policy, shape, options, [](auto) {});
}

// The capability answer alone (no launch).
inline Selection check_supported(Kernel kernel, const numerics::PrecisionPolicy& policy,
                                 const attention::Shape& shape, const attention::Options& options) {
  return select(kernel, policy, shape, options, [](auto) {});
}

}  // namespace attndev::cuda
