// Precision policy: the format each stage of attention is rounded to.
//
// Stages are the places where real kernels round (see docs/numerics.md for where each algorithm
// applies each one and why):
//   input        Q, K, V as stored in memory
//   score_accum  accumulator of the QK^T dot products
//   score        S after the dot product and scaling (stored S in baseline, registers in flash)
//   stats        running max m, running sum l, rescale factors, exp() evaluation
//   prob         P as fed to the second matmul (flash kernels cast P to bf16/fp16 in registers)
//   out_accum    accumulator of the PV dot products (and flash2's O carried in registers)
//   output       O as stored; flash1 also stores O between K/V blocks in this format
//
// The formats above are where results are *stored*. The rounding model (Model) says what an
// operation computes in before its result is stored, and so where running state is rounded:
//   kernel      each operation is computed exactly and rounded once, to its stage's format; a
//               reduction's running sum (dot product, row sum) is rounded to the stage's format
//               after every term. Compute format = stored format.
//   framework   each operation is one op of a framework (PyTorch) on tensors of the stage's
//               format: it computes in the opmath format (fp32; fp64 for fp64 tensors) and its
//               output is rounded to the stage's format, so most results are rounded twice
//               (exact -> fp32 -> bf16), as the framework does. A reduction (matmul, row sum)
//               accumulates in opmath and is rounded to the stage's format once, at the end.
// Where the running state (m, l, O) of an online softmax is rounded follows from the two:
//   every element   kernel model with a narrow stats/out_accum format (each addition to l or O
//                   rounded to it: the working-* presets)
//   every K/V block framework model (each block's update is a tensor op whose output is stored),
//                   and FA-1 under any model (it writes O, l, m to HBM after every block)
//   never           FA-2 under the kernel model (m, l, O in registers, in their compute formats)
// docs/numerics.md, "Kernels and frameworks", has the op sequences of each algorithm.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "format.hpp"
#include "mma_profiles.hpp"
#include "round.hpp"

namespace attndev::numerics {

enum class Stage : unsigned char { input, score_accum, score, stats, prob, out_accum, output };

inline constexpr std::array<Stage, 7> kAllStages = {
    Stage::input, Stage::score_accum, Stage::score, Stage::stats,
    Stage::prob,  Stage::out_accum,   Stage::output};

inline constexpr const char* stage_name(Stage s) {
  constexpr const char* kNames[] = {"input", "score_accum", "score", "stats",
                                    "prob",  "out_accum",   "output"};
  return kNames[static_cast<int>(s)];
}

// The rounding model: what an operation computes in before its result is stored (above).
enum class Model : std::uint8_t { kernel, framework };

inline constexpr const char* model_name(Model m) {
  return m == Model::framework ? "framework" : "kernel";
}

// How a flash kernel evaluates its online softmax (kernel model; flash2 only, generic path only):
//   fa2               FA-2's CUDA form: raw scores, exp2 with scale * log2(e) folded into one
//                     FFMA, the row sum added element by element, O += P V term by term.
//   torch_cpu_avx2    PyTorch's CPU flash kernel (aten/src/ATen/native/cpu/
//                     FlashAttentionKernel.cpp) as built for AVX2 (Vectorized<float> of 8
//                     lanes): scores multiplied by the scale before the max; p = exp(s - m) with
//                     the vectorized fexp_u20 when P is stored in bf16/fp16 (exp_u20 otherwise;
//                     numerics/math.hpp) on each full group of 8 keys of the K/V block and the
//                     scalar exp on the block's tail; the block's row sum in 8 lanes, reduced as
//                     vec_reduce_all does, ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), then the
//                     tail added in order; l = block_sum +
//                     exp(m_old - m_new) * l; the block's P V formed apart (a gemm with beta = 1)
//                     and added to O * exp(m_old - m_new).
//   torch_cpu_avx512  the same kernel as built for AVX-512 (16 lanes): the same steps with groups
//                     of 16 keys (so a block's scalar tail is its width mod 16) and the 16 lane
//                     sums reduced by halves (lane i + 8, + 4, + 2, + 1: vec_reduce_all's shuffles
//                     in aten/src/ATen/cpu/vec/functional_base.h). Its fexp_u20 / exp_u20 are the
//                     AVX2 op sequences in 512-bit registers (vec512_float.h), lane for lane the
//                     same values. PyTorch runs it wherever the CPU has AVX-512 unless
//                     ATEN_CPU_CAPABILITY says otherwise.
// docs/numerics.md, "PyTorch's CPU flash kernel", has the sources of each step.
enum class SoftmaxForm : std::uint8_t { fa2, torch_cpu_avx2, torch_cpu_avx512 };

// Vectorized<float>::size() of each vector form's build; 0 for FA-2's form (no lanes).
inline constexpr int torch_cpu_lanes(SoftmaxForm f) {
  return f == SoftmaxForm::torch_cpu_avx2 ? 8 : f == SoftmaxForm::torch_cpu_avx512 ? 16 : 0;
}

inline constexpr const char* softmax_form_name(SoftmaxForm f) {
  return f == SoftmaxForm::torch_cpu_avx2     ? "torch-cpu-avx2"
         : f == SoftmaxForm::torch_cpu_avx512 ? "torch-cpu-avx512"
                                              : "fa2";
}

struct PrecisionPolicy {
  Format input = Format::fp64;
  Format score_accum = Format::fp64;
  Format score = Format::fp64;
  Format stats = Format::fp64;
  Format prob = Format::fp64;
  Format out_accum = Format::fp64;
  Format output = Format::fp64;
  // Dot products accumulate with a fused multiply-add (one rounding per step), as tensor cores
  // and FFMA loops do; false rounds the product and the sum separately.
  bool fma = true;
  // What fp8-e4m3 values beyond 448 become (saturating casts are what FA-3 uses).
  Overflow fp8_overflow = Overflow::saturate;
  // What an operation computes in before its result is stored (see the top of this file).
  Model model = Model::kernel;
  // How the online softmax is evaluated (SoftmaxForm above): FA-2's form unless a preset models
  // PyTorch's CPU kernel.
  SoftmaxForm softmax = SoftmaxForm::fa2;
  // The tensor cores whose arithmetic both GEMMs run on (numerics/mma.hpp): none keeps the
  // dot products as chains of FMAs (or mul-add) in score_accum / out_accum; an architecture
  // makes QK^T (over d) and P V (over a block's keys) the profile's fused dot-adds in the
  // kernel's k order, with the running accumulator as C (docs/numerics.md, "Tensor cores").
  mma::Arch mma = mma::Arch::none;

  // The format stage s's operations compute (and its reductions accumulate) in: the stage's own
  // format under the kernel model; under the framework model PyTorch's opmath type (float for
  // every format narrower than double: at::opmath_type<BFloat16/Half> is float).
  ATTNDEV_HD constexpr Format compute(Stage s) const {
    const Format f = (*this)[s];
    if (model == Model::kernel || f == Format::fp64) return f;
    return Format::fp32;
  }

  // The one stage -> member table: operator[] and at() both read it, on the host and in device
  // code (a local constexpr array, so nvcc needs no __device__ copy of a static table).
  using StageMember = Format PrecisionPolicy::*;
  ATTNDEV_HD static constexpr StageMember member(Stage s) {
    constexpr StageMember kMembers[] = {&PrecisionPolicy::input, &PrecisionPolicy::score_accum,
                                        &PrecisionPolicy::score, &PrecisionPolicy::stats,
                                        &PrecisionPolicy::prob,  &PrecisionPolicy::out_accum,
                                        &PrecisionPolicy::output};
    static_assert(std::size(kMembers) == kAllStages.size(), "one member per stage");
    return kMembers[static_cast<int>(s)];
  }
  ATTNDEV_HD constexpr Format operator[](Stage s) const { return this->*member(s); }
  constexpr Format& at(Stage s) { return this->*member(s); }
  // Rounds x as stage s stores it.
  ATTNDEV_HD double round(Stage s, double x) const {
    const Format f = (*this)[s];
    return round_to(f, x, traits(f).has_inf ? Overflow::to_inf : fp8_overflow);
  }
  friend constexpr bool operator==(const PrecisionPolicy&, const PrecisionPolicy&) = default;
};

struct PolicyPreset {
  std::string_view name;
  std::string_view description;
  PrecisionPolicy policy;
};

namespace detail {
constexpr PrecisionPolicy uniform_policy(Format f) {
  return {f, f, f, f, f, f, f, true, Overflow::saturate, Model::kernel};
}
// A loop written with framework tensors of format f: every tensor (S, P, m, l, O, each matmul's
// output) stored in f, every op computed in fp32 opmath (fp64 for f = fp64).
constexpr PrecisionPolicy framework_policy(Format f) {
  return {f, f, f, f, f, f, f, true, Overflow::saturate, Model::framework};
}
// FA-2 kernel: fp32 scores, statistics and accumulators; P cast to the input format before PV.
constexpr PrecisionPolicy kernel_policy(Format f) {
  return {f, Format::fp32, Format::fp32,       Format::fp32, f, Format::fp32,
          f, true,         Overflow::saturate, Model::kernel};
}
// PyTorch's CPU flash kernel (the AVX2 or the AVX-512 build: `form`): kernel_policy's formats
// (fp32 scores, statistics and gemm outputs, P cast to f before P V, O rounded once) with its
// softmax form.
constexpr PrecisionPolicy torch_cpu_flash_policy(Format f, SoftmaxForm form) {
  PrecisionPolicy p = kernel_policy(f);
  p.softmax = form;
  return p;
}
// Every stage but the two matmul accumulators in the working format under the kernel model:
// every softmax operation and every addition to the row sum rounded to f (state rounded at every
// element). Not a model of a framework (that is framework_policy).
constexpr PrecisionPolicy working_policy(Format f) {
  return {f, Format::fp32, f, f, f, Format::fp32, f, true, Overflow::saturate, Model::kernel};
}
// A framework's math path: matmul outputs and softmax output in the working format, softmax
// computed internally in fp32.
constexpr PrecisionPolicy torch_math_policy(Format f) {
  return {f,
          Format::fp32,
          f,
          Format::fp32,
          f,
          Format::fp32,
          f,
          true,
          Overflow::saturate,
          Model::kernel};
}
// The policy the quantized recipes (attention/quant_recipes.hpp) read: inputs stored in fp16
// before the recipe quantizes them, fp32 scores, statistics and accumulators, O stored in fp16,
// and the tensor-core profile `arch`. The recipe itself decides P's format and every quantized
// operand; prob = fp16 only keeps the policy one that mma_policy_error accepts.
constexpr PrecisionPolicy quant_policy(mma::Arch arch) {
  PrecisionPolicy p = kernel_policy(Format::fp16);
  p.mma = arch;
  return p;
}
}  // namespace detail

inline constexpr PolicyPreset kPolicyPresets[] = {
    {"kernel-bf16", "FA-2 kernel: bf16 in/out, fp32 scores/stats/accumulators, P cast to bf16",
     detail::kernel_policy(Format::bf16)},
    {"kernel-fp16", "FA-2 kernel: fp16 in/out, fp32 scores/stats/accumulators, P cast to fp16",
     detail::kernel_policy(Format::fp16)},
    {"torch-cpu-flash-bf16",
     "PyTorch's CPU flash kernel (SDPBackend.FLASH_ATTENTION, AVX2 build), bf16: kernel-bf16 with "
     "scaled scores, fexp_u20 over 8 lanes, lane-wise row sums, P V added per K/V block",
     detail::torch_cpu_flash_policy(Format::bf16, SoftmaxForm::torch_cpu_avx2)},
    {"torch-cpu-flash-fp16",
     "PyTorch's CPU flash kernel (SDPBackend.FLASH_ATTENTION, AVX2 build), fp16: kernel-fp16 with "
     "scaled scores, fexp_u20 over 8 lanes, lane-wise row sums, P V added per K/V block",
     detail::torch_cpu_flash_policy(Format::fp16, SoftmaxForm::torch_cpu_avx2)},
    {"torch-cpu-flash-avx512-bf16",
     "PyTorch's CPU flash kernel (SDPBackend.FLASH_ATTENTION, AVX-512 build: PyTorch's default on "
     "a CPU with AVX-512), bf16: torch-cpu-flash-bf16 with 16 lanes",
     detail::torch_cpu_flash_policy(Format::bf16, SoftmaxForm::torch_cpu_avx512)},
    {"torch-cpu-flash-avx512-fp16",
     "PyTorch's CPU flash kernel (SDPBackend.FLASH_ATTENTION, AVX-512 build: PyTorch's default on "
     "a CPU with AVX-512), fp16: torch-cpu-flash-fp16 with 16 lanes",
     detail::torch_cpu_flash_policy(Format::fp16, SoftmaxForm::torch_cpu_avx512)},
    {"framework-bf16",
     "FA-1 / FA-2 loop (and explicit baseline) written with bf16 PyTorch tensors, as Golden et "
     "al.'s re-implementation: each op computes in fp32, its output stored in bf16",
     detail::framework_policy(Format::bf16)},
    {"framework-fp16",
     "FA-1 / FA-2 loop (and explicit baseline) written with fp16 PyTorch tensors: each op "
     "computes in fp32, its output stored in fp16",
     detail::framework_policy(Format::fp16)},
    {"framework-fp32", "FA-1 / FA-2 loop (and explicit baseline) written with fp32 PyTorch tensors",
     detail::framework_policy(Format::fp32)},
    {"framework-fp64", "FA-1 / FA-2 loop (and explicit baseline) written with fp64 PyTorch tensors",
     detail::framework_policy(Format::fp64)},
    {"working-bf16",
     "ablation, no real implementation: kernel rounding with S, softmax and state in bf16, "
     "each addition to l rounded (state rounded every element); use framework-bf16 for a "
     "framework re-implementation",
     detail::working_policy(Format::bf16)},
    {"working-fp16",
     "ablation, no real implementation: kernel rounding with S, softmax and state in fp16, "
     "each addition to l rounded (state rounded every element); use framework-fp16",
     detail::working_policy(Format::fp16)},
    {"torch-math-bf16", "framework math path: S, P, O stored in bf16, softmax computed in fp32",
     detail::torch_math_policy(Format::bf16)},
    {"torch-math-fp16", "framework math path: S, P, O stored in fp16, softmax computed in fp32",
     detail::torch_math_policy(Format::fp16)},
    {"fp32", "every stage fp32", detail::uniform_policy(Format::fp32)},
    {"fp64", "every stage fp64 (the golden's policy)", detail::uniform_policy(Format::fp64)},
    {"fp8-e4m3",
     "FA-3 fp8: e4m3 Q/K/V and P, fp32 scores/stats/accumulators, bf16 output",
     {Format::fp8_e4m3, Format::fp32, Format::fp32, Format::fp32, Format::fp8_e4m3, Format::fp32,
      Format::bf16, true, Overflow::saturate, Model::kernel}},
    // The quantized recipes (sage2-8b, mxfp8, ...) read a policy's input, output and mma only;
    // without a tensor-core model they run under kernel-fp16 (the same policy: a preset of its
    // own would be a duplicate, which a result could not be labelled by).
    {"quant-fp16-sm89",
     "quantized recipes on Ada's tensor cores (fp8: 13 fraction bits, e8m13): kernel-fp16 with "
     "\"mma\": \"sm89\"",
     detail::quant_policy(mma::Arch::sm89)},
    {"quant-fp16-sm90",
     "quantized recipes on Hopper's tensor cores (fp8: 13 fraction bits, e8m13): kernel-fp16 "
     "with \"mma\": \"sm90\"",
     detail::quant_policy(mma::Arch::sm90)},
    {"quant-fp16-sm100",
     "quantized recipes on Blackwell's tensor cores (fp8: 25 fraction bits; block-scaled mxfp8, "
     "nvfp4): kernel-fp16 with \"mma\": \"sm100\"",
     detail::quant_policy(mma::Arch::sm100)},
};

// Empty when the policy's tensor-core choice is possible; else what is wrong and how to fix it:
// the operands of QK^T (input x input) and of P V (prob x input) must be a pair the
// architecture's tensor cores multiply, and both accumulators fp32 (what the matrix unit keeps).
// Host only.
inline std::string mma_policy_error(const PrecisionPolicy& p) {
  if (p.mma == mma::Arch::none) return {};
  const std::string arch = mma::arch_name(p.mma);
  for (Stage s : {Stage::score_accum, Stage::out_accum})
    if (p.compute(s) != Format::fp32)
      return std::string("\"mma\": \"") + arch + "\" accumulates in fp32, but " + stage_name(s) +
             " computes in " + traits(p.compute(s)).name + "; set \"" + stage_name(s) +
             "\": \"fp32\" or drop \"mma\"";
  struct Gemm {
    const char* name;
    Format a, b;
  };
  for (const Gemm& g : {Gemm{"QK^T (input x input)", p.input, p.input},
                        Gemm{"P V (prob x input)", p.prob, p.input}}) {
    mma::Kind kind;
    if (!mma::kind_of(g.a, g.b, kind))
      return std::string("\"mma\": \"") + arch + "\": no tensor-core instruction multiplies " +
             traits(g.a).name + " by " + traits(g.b).name + " (" + g.name +
             "); tensor cores take fp16, bf16, tf32/fp32 or fp8 operands of one kind";
    if (const std::string e = mma::profile_error(p.mma, kind); !e.empty())
      return std::string("\"mma\": ") + e;
  }
  return {};
}

inline const PolicyPreset* find_preset(std::string_view name) {
  for (const PolicyPreset& p : kPolicyPresets)
    if (p.name == name) return &p;
  return nullptr;
}

inline constexpr PrecisionPolicy kGoldenPolicy = detail::uniform_policy(Format::fp64);

}  // namespace attndev::numerics
