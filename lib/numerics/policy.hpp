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
#pragma once

#include <array>
#include <iterator>
#include <string_view>

#include "format.hpp"
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
  return {f, f, f, f, f, f, f, true, Overflow::saturate};
}
// FA-2 kernel: fp32 scores, statistics and accumulators; P cast to the input format before PV.
constexpr PrecisionPolicy kernel_policy(Format f) {
  return {f, Format::fp32, Format::fp32,      Format::fp32, f, Format::fp32,
          f, true,         Overflow::saturate};
}
// Every intermediate tensor stored in the working format; matmuls accumulate in fp32 inside.
constexpr PrecisionPolicy working_policy(Format f) {
  return {f, Format::fp32, f, f, f, Format::fp32, f, true, Overflow::saturate};
}
// A framework's math path: matmul outputs and softmax output in the working format, softmax
// computed internally in fp32.
constexpr PrecisionPolicy torch_math_policy(Format f) {
  return {f, Format::fp32, f, Format::fp32, f, Format::fp32, f, true, Overflow::saturate};
}
}  // namespace detail

inline constexpr PolicyPreset kPolicyPresets[] = {
    {"kernel-bf16", "FA-2 kernel: bf16 in/out, fp32 scores/stats/accumulators, P cast to bf16",
     detail::kernel_policy(Format::bf16)},
    {"kernel-fp16", "FA-2 kernel: fp16 in/out, fp32 scores/stats/accumulators, P cast to fp16",
     detail::kernel_policy(Format::fp16)},
    {"working-bf16", "every intermediate tensor stored in bf16 (matmuls accumulate in fp32)",
     detail::working_policy(Format::bf16)},
    {"working-fp16", "every intermediate tensor stored in fp16 (matmuls accumulate in fp32)",
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
      Format::bf16, true, Overflow::saturate}},
};

inline const PolicyPreset* find_preset(std::string_view name) {
  for (const PolicyPreset& p : kPolicyPresets)
    if (p.name == name) return &p;
  return nullptr;
}

inline constexpr PrecisionPolicy kGoldenPolicy = detail::uniform_policy(Format::fp64);

}  // namespace attndev::numerics
