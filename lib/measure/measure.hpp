// The one measurement path (docs/CONTRIBUTING.md #7). Every place that says how far an output is
// from the truth (`attndev point`, `attndev run`, `attndev match`, the shadows inside a training
// model) goes through these functions, so the input rounding, the golden, the scale of a relative
// error and the guards on all three are defined once:
//
//   raw Q, K, V --round_inputs(format)---> the values a variant reads
//               --golden_of()------------> O_golden: baseline in fp64 on exactly those values
//   O_variant   --deviation()------------> metrics vs O_golden, max_rel floored by the variant's
//                                          output format at the golden's scale
//   O_variant   --compare_outputs()------> |O - O_ref| and ulps against another variant's output
//
// The guard: unmeasurable() says when rounded inputs or their golden are not finite, so that no
// caller compares anything there; References computes it once per input set and format.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "attention/attention.hpp"
#include "inputs/random_inputs.hpp"
#include "metrics/deviation.hpp"
#include "metrics/ulp.hpp"
#include "numerics/format.hpp"

namespace attndev::measure {

// Every element of Q, K, V rounded once to the input format (round-to-nearest-even straight from
// double), with the generator's overflow rule: fp8 saturates, as FA-3's input casts do, so an
// outlier beyond the format's range stays finite; other formats overflow to inf. Values that are
// already representable stay as they are, so a variant's own input stage is then the identity and
// the golden and the variant read the same values.
attention::Inputs round_inputs(const attention::Inputs& raw, numerics::Format format);

// max |x| over the finite elements (0 when there are none): the scale of a tensor. Non-finite
// elements are left out so that one inf does not make every relative error zero.
double max_abs_finite(std::span<const double> x);

// The floor of max_rel: |x - ref| / max(|ref|, floor). Below one unit roundoff of the output format
// at the reference's scale the format cannot resolve the reference, and a relative error there
// measures the format, not the kernel (docs/CONTRIBUTING.md #8). 0 when the scale is not finite.
double max_rel_floor(numerics::Format output_format, double max_abs_reference);

// NaN and infinite elements of a tensor, and the flat index of the first of either (-1: none).
struct NonFinite {
  std::int64_t nan = 0, inf = 0, first = -1;
  bool any() const { return nan + inf > 0; }
  // "3 NaN and 1 infinite value(s) (first at flat index 17)"
  std::string text() const;
};
NonFinite count_non_finite(std::span<const double> x);

// The FP64 golden of one set of (already rounded) inputs, and its scale.
struct Golden {
  attention::Output output;  // O (B, H, N_q, d) and lse (B, H, N_q)
  double max_abs = 0;        // max_abs_finite(O)
};
// What computes the golden's output: attention::golden on the CPU (the default), or the same
// algorithm elsewhere (the run-level cuda backend's device golden, lib/cuda).
using GoldenFn =
    std::function<attention::Output(const attention::Inputs&, const attention::Options&)>;
Golden golden_of(const attention::Inputs& rounded, const attention::Options& options,
                 const GoldenFn& compute = {});

// Why nothing can be measured on these inputs, or nullopt. Inputs that overflow their format when
// rounded (outlier(1e6, 1) or normal(0, 1e5) at fp16 round to inf), or a golden that is not
// finite, make every output and the golden inf, NaN or a degenerate 0: a metric of such a pair
// reads as a clean "ok" of zeros or a silent NaN. Every caller (`run` marks the row skipped,
// `point` exits 3, `match` refuses, in-model rows and Python say skipped) asks before comparing.
std::optional<std::string> unmeasurable(const attention::Inputs& rounded, const Golden& golden,
                                        numerics::Format input_format);

// An output's deviation from a reference tensor of known scale (a golden's max_abs).
// Throws std::invalid_argument when the sizes differ.
metrics::Deviation deviation(std::span<const double> output, std::span<const double> reference,
                             double reference_max_abs, numerics::Format output_format);
// The same against a golden.
metrics::Deviation deviation(std::span<const double> output, const Golden& golden,
                             numerics::Format output_format);

// One output against another's (a same-precision baseline, a real kernel): the absolute
// difference and the element-level agreement in ulps of `output_format`.
struct OutputComparison {
  metrics::Deviation difference;  // |O - O_ref|, no relative floor
  metrics::UlpComparison ulps;
};
OutputComparison compare_outputs(std::span<const double> output, std::span<const double> reference,
                                 numerics::Format output_format);

// Where one input set's Q, K, V come from, rounded to the format asked for.
using InputSource = std::function<attention::Inputs(numerics::Format)>;
// Drawn from the counter-based generator (lib/inputs): the same values for a (seed, tensor,
// index) on every machine, rounded as it draws them (round_inputs' rule).
InputSource drawn(const attention::Shape& shape, const inputs::Distribution& distribution,
                  std::uint64_t seed);
// Raw values obtained once, on the first request (a file read, a capture), then rounded.
InputSource rounded_from(std::function<attention::Inputs()> raw);

// The references of one input set: inputs and golden once per input format that some variant
// reads. The variants of one point usually read one or two formats, so most share a golden.
class References {
 public:
  struct Reference {
    attention::Inputs inputs;  // rounded to the key's format
    Golden golden;
    std::optional<std::string> unmeasurable;  // measure::unmeasurable of the two: skip when set
  };
  // `options` are the golden's (causal, scale, placement, threads; tiles do not matter to it).
  // `golden` computes it (empty: attention::golden).
  References(InputSource source, attention::Options options, GoldenFn golden = {});

  const Reference& for_format(numerics::Format input_format);
  // Those computed so far, in format order (dumps write each once).
  const std::map<numerics::Format, Reference>& computed() const { return by_format_; }

 private:
  InputSource source_;
  attention::Options options_;
  GoldenFn golden_;
  std::map<numerics::Format, Reference> by_format_;
};

}  // namespace attndev::measure
