// Stage overrides of a variant's policy: the `"stage"` key of a config's variant (and its
// `stage` variant axis), which `attndev attribute` writes for every stage of a policy.
//
//   "none"              the policy as it is
//   "only:S[+S...]"     the named stages keep the policy's formats, every other stage but the
//                       input is fp64; the inputs stay as the policy rounds them (the golden
//                       runs on the same rounded inputs, so they add no deviation, and every
//                       row measures the same data); the rounding model, fma, fp8 overflow and
//                       softmax form stay the policy's
//   "raise:S[+S...]"    the named stages raised to fp32 where the policy has them narrower, the
//                       rest as the policy has them (leave-one-out)
//
// Some overrides cannot change a bit: a stage that only ever rounds values another stage has
// already rounded to a format that fits in its own (score rounds what score_accum produced;
// output rounds what out_accum produced; prob, in the flash algorithms, what stats produced).
// Raising such a stage alone changes nothing while its feeder still rounds; stage_no_effect says
// so, and coupled_raise names the group that has to move together. The feeders are read off the
// row functions (lib/attention/rows/), and test_stage.cpp runs every claim against the emulator.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"

namespace attndev::experiment {

enum class StageMode : unsigned char { none, only, raise };

// The format "raise" moves a stage to.
inline constexpr numerics::Format kRaiseFormat = numerics::Format::fp32;

struct StageSpec {
  StageMode mode = StageMode::none;
  std::vector<numerics::Stage> stages;  // in kAllStages order, no duplicates; empty for none

  // Canonical text: "none", "only:score_accum", "raise:score_accum+score".
  std::string text() const;
  // "score_accum+score"; "" for none.
  std::string stages_text() const;
  bool contains(numerics::Stage s) const;
  friend bool operator==(const StageSpec&, const StageSpec&) = default;
};

// Parses the text forms above (stages in any order; written back in kAllStages order). On failure
// returns false with `error` saying what is wrong and what is valid.
bool parse_stage_spec(std::string_view text, StageSpec& out, std::string& error);

// The policy a variant runs: `policy` changed as `spec` says.
numerics::PrecisionPolicy apply_stage_spec(const numerics::PrecisionPolicy& policy,
                                           const StageSpec& spec);

// Every finite value of `a` (and its infinities, if it has them) is a value of `b`: rounding a
// value of `a` to `b` changes nothing.
bool format_fits(numerics::Format a, numerics::Format b);

// The stage whose results are the only values `stage` rounds in `algorithm`, and the format those
// values are in under `policy`. nullopt where the stage rounds values of its own making, and for
// the fp8 algorithms (their dequantization sits between the stages).
struct Feeder {
  numerics::Stage stage;
  numerics::Format format;
};
std::optional<Feeder> stage_feeder(attention::Algorithm algorithm,
                                   const numerics::PrecisionPolicy& policy, numerics::Stage stage);

// Why `spec` cannot change a bit of `algorithm`'s output under `policy`, as one clause ("score
// rounds only values of score_accum, which are bf16 already"), or "" when it can (or when nothing
// is known). For only:, the stages named all being fp64 under the policy; for raise:, every named
// stage already fp32 or wider, or its feeder (unraised) fitting in its format.
std::string stage_no_effect(attention::Algorithm algorithm, const numerics::PrecisionPolicy& policy,
                            const StageSpec& spec);

// The stages a leave-one-out of `stage` has to raise together for the change to reach the output:
// `stage` and, while raising it alone has no effect because of its feeder, the feeder too (and
// so on). Just {stage} where it has an effect alone or nothing helps.
std::vector<numerics::Stage> coupled_raise(attention::Algorithm algorithm,
                                           const numerics::PrecisionPolicy& policy,
                                           numerics::Stage stage);

}  // namespace attndev::experiment
