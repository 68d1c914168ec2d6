// The CPU's kernel choice in one table: which policies run on a fast path, and on which
// instantiation (value type, statistics format, rounding model). Everything that chooses is
// derived from the table below and checked at compile time:
//   * fast_kind() admits a policy only if its instance is in the table (so the dispatch of
//     fast.cpp, generated from the same table, always finds it);
//   * the dispatch (fast.cpp) is a compile-time walk of kFastInstances, not a hand-written switch;
//   * the fast_*.cpp units instantiate the table's rows through the X-macros, so a row with no
//     instantiation fails at link time, never as a logic_error at run time;
//   * the static_asserts at the end check that the table has no duplicate, that every row is
//     reachable (some policy selects it) and that the presets choose the paths they are known to.
// The declarations of the two entry templates are here; their definitions are in fast_items.hpp
// (heavy: the instantiating units alone include it, so nothing is instantiated twice).
#pragma once

#include <cstddef>
#include <iterator>
#include <string_view>
#include <type_traits>

#include "attention/detail.hpp"
#include "numerics/format.hpp"
#include "numerics/policy.hpp"

// The table. X(T, STATS, FRAMEWORK): value type, the statistics format its operations are done
// in (exactly, numerics::fixed, for the narrow ones), the framework rounding model or the kernel
// one. Listed by value type because each value type is instantiated in units of its own.
//   float:  the kernel model with fp32 accumulators and statistics fp32/bf16/fp16/tf32; the
//           framework model (every stage narrower than fp64 computed in fp32)
//   double: fp64 accumulators with statistics fp64/bf16/fp16/tf32 (the kernel model; a policy
//           that is fp64 everywhere rounds nothing, so it is the same under either model)
#define ATTNDEV_FAST_INSTANCES_F32(X) \
  X(float, fp32, false)               \
  X(float, bf16, false)               \
  X(float, fp16, false)               \
  X(float, tf32, false)               \
  X(float, fp32, true)
#define ATTNDEV_FAST_INSTANCES_F64(X) \
  X(double, fp64, false)              \
  X(double, bf16, false)              \
  X(double, fp16, false)              \
  X(double, tf32, false)
// ATTNDEV_FAST_KERNEL_MODEL_ONLY(FRAMEWORK, TEXT...) expands to TEXT for a kernel-model row only
// (the fp8 algorithms model FA-3's kernel and have no framework instantiation).
#define ATTNDEV_FAST_KERNEL_MODEL_ONLY(F, ...) ATTNDEV_FAST_KERNEL_MODEL_ONLY_##F(__VA_ARGS__)
#define ATTNDEV_FAST_KERNEL_MODEL_ONLY_false(...) __VA_ARGS__
#define ATTNDEV_FAST_KERNEL_MODEL_ONLY_true(...)

namespace attndev::attention::detail {

struct Fp8Problem;

// One row of the table.
struct FastInstance {
  FastKind kind;
  numerics::Format stats;
  bool framework;
  friend constexpr bool operator==(const FastInstance&, const FastInstance&) = default;
};

template <FastKind kKind>
using FastValue = std::conditional_t<kKind == FastKind::f32, float, double>;

inline constexpr FastInstance kFastInstances[] = {
#define ATTNDEV_FAST_ROW(T, S, F) \
  FastInstance{std::is_same_v<T, float> ? FastKind::f32 : FastKind::f64, numerics::Format::S, F},
    ATTNDEV_FAST_INSTANCES_F32(ATTNDEV_FAST_ROW) ATTNDEV_FAST_INSTANCES_F64(ATTNDEV_FAST_ROW)
#undef ATTNDEV_FAST_ROW
};

// The row a policy runs on once its value type is chosen. An fp64-everywhere policy under the
// framework model runs the kernel-model double instance: rounding to fp64 changes nothing.
constexpr FastInstance fast_instance(FastKind kind, const numerics::PrecisionPolicy& policy) {
  const bool framework = policy.model == numerics::Model::framework;
  if (kind == FastKind::f64)
    return {kind, framework ? numerics::Format::fp64 : policy.stats, false};
  return {kind, framework ? numerics::Format::fp32 : policy.stats, framework};
}

constexpr bool has_fast_instance(const FastInstance& instance) {
  for (const FastInstance& row : kFastInstances)
    if (row == instance) return true;
  return false;
}

namespace fast_rules {

constexpr bool all_stages(const numerics::PrecisionPolicy& policy, numerics::Format f) {
  for (numerics::Stage s : numerics::kAllStages)
    if (policy[s] != f) return false;
  return true;
}

// The value type a policy's accumulators and storage stages allow, before the table is asked
// about its statistics. The float path holds every format but fp64 exactly and rounds to it
// with float bit operations (numerics::FloatRounder); the double path rounds with numerics' own
// functions, so its storage stages may be any format.
constexpr FastKind value_kind(const numerics::PrecisionPolicy& policy) {
  using numerics::Format;
  if (all_stages(policy, Format::fp64)) return FastKind::f64;
  if (policy.model == numerics::Model::kernel && policy.score_accum == Format::fp64 &&
      policy.out_accum == Format::fp64)
    return FastKind::f64;
  // The framework model computes every stage narrower than fp64 in fp32 and stores each op's
  // output in its stage's format: float operations and FloatRounder, whatever the formats, as
  // long as no stage is fp64 (a mixed fp64/fp32 computation has no single value type).
  if (policy.model == numerics::Model::framework) {
    for (numerics::Stage s : numerics::kAllStages)
      if (policy[s] == Format::fp64) return FastKind::none;
    return FastKind::f32;
  }
  if (policy.score_accum == Format::fp32 && policy.out_accum == Format::fp32 &&
      policy.input != Format::fp64 && policy.score != Format::fp64 && policy.prob != Format::fp64 &&
      policy.output != Format::fp64)
    return FastKind::f32;
  return FastKind::none;
}

}  // namespace fast_rules

// Fast paths are exact replicas of the generic path where every operation has a float (or
// double) implementation with the same bits: score_accum and out_accum, the dot-product
// accumulators of the SIMD kernels, must be fp32 (resp. fp64); the stats stage is one the table
// lists, whose operations the fast path computes exactly and rounds once
// (numerics/static_arith.hpp), never as a float operation rounded afterwards (a double
// rounding). Storage-only stages (input, score, prob, output) may be any format up to fp32 on the
// float path, fp8 included: rounding a float to it is a few bit operations.
constexpr FastKind fast_kind(Algorithm algorithm, const numerics::PrecisionPolicy& policy) {
  // The vector softmax form (PyTorch's CPU kernel) runs on the generic path only.
  if (policy.softmax != numerics::SoftmaxForm::fa2) return FastKind::none;
  // A tensor-core profile's GEMMs have a fast form for flash2, flash1 and the baseline
  // (tc_simd_kernels.hpp); the other algorithms take them on the generic path (rows/tc_gemm.hpp).
  if (policy.mma != numerics::mma::Arch::none && algorithm != Algorithm::flash2 &&
      algorithm != Algorithm::flash1 && algorithm != Algorithm::baseline)
    return FastKind::none;
  const FastKind kind = fast_rules::value_kind(policy);
  if (kind == FastKind::none || !has_fast_instance(fast_instance(kind, policy)))
    return FastKind::none;
  return kind;
}

namespace fast {

template <class T, numerics::Format kStats, bool kFramework>
void run_fast_t(Algorithm algorithm, const Problem& p, Output& out);

// fp8 algorithms model FA-3's kernel: the kernel model only (run() refuses the framework model).
template <class T, numerics::Format kStats, bool kFramework>
void run_fp8_t(Algorithm algorithm, const Fp8Problem& f, Output& out);

}  // namespace fast

// Compile-time checks of the table.
namespace fast_checks {

constexpr bool no_duplicates() {
  constexpr std::size_t n = std::size(kFastInstances);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (kFastInstances[i] == kFastInstances[j]) return false;
  return true;
}
static_assert(no_duplicates(), "kFastInstances lists a row twice");

// A policy that selects `row`: accumulators of its value type, statistics as the row says,
// everything else fp32 (fp64 on the double path).
constexpr numerics::PrecisionPolicy policy_for(const FastInstance& row) {
  using numerics::Format;
  const Format wide = row.kind == FastKind::f32 ? Format::fp32 : Format::fp64;
  numerics::PrecisionPolicy p{};
  for (numerics::Stage s : numerics::kAllStages) p.at(s) = wide;
  p.stats = row.stats;
  p.model = row.framework ? numerics::Model::framework : numerics::Model::kernel;
  return p;
}
constexpr bool every_row_reachable() {
  for (const FastInstance& row : kFastInstances) {
    const numerics::PrecisionPolicy p = policy_for(row);
    if (fast_kind(Algorithm::flash2, p) != row.kind || fast_instance(row.kind, p) != row)
      return false;
  }
  return true;
}
static_assert(every_row_reachable(), "a row of kFastInstances that no policy selects");

constexpr bool framework_rows_are_fp32() {
  for (const FastInstance& row : kFastInstances)
    if (row.framework && (row.kind != FastKind::f32 || row.stats != numerics::Format::fp32))
      return false;
  return true;
}
static_assert(framework_rows_are_fp32(),
              "the framework model computes every narrower stage in fp32: float, fp32 stats");

constexpr FastKind preset_kind(std::string_view name) {
  for (const numerics::PolicyPreset& preset : numerics::kPolicyPresets)
    if (preset.name == name) return fast_kind(Algorithm::flash2, preset.policy);
  throw "fast_kinds.hpp: no preset of that name";  // not a constant expression: a compile error
}
// The paths the quickstart's and the papers' presets are known to take (docs/numerics.md).
static_assert(preset_kind("kernel-bf16") == FastKind::f32);
static_assert(preset_kind("kernel-fp16") == FastKind::f32);
static_assert(preset_kind("torch-math-bf16") == FastKind::f32);
static_assert(preset_kind("framework-bf16") == FastKind::f32);
static_assert(preset_kind("framework-fp64") == FastKind::f64);
static_assert(preset_kind("fp8-e4m3") == FastKind::f32);
static_assert(preset_kind("fp32") == FastKind::f32);
static_assert(preset_kind("fp64") == FastKind::f64);
static_assert(preset_kind("torch-cpu-flash-bf16") == FastKind::none);
static_assert(preset_kind("torch-cpu-flash-fp16") == FastKind::none);

}  // namespace fast_checks

}  // namespace attndev::attention::detail
