// The one measurement path (lib/measure): input rounding, the golden and its scale, the max_rel
// floor and its guards, the per-format cache of references.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "inputs/random_inputs.hpp"
#include "measure/measure.hpp"

namespace {

using namespace attndev;
using numerics::Format;

attention::Inputs small_inputs(const std::vector<double>& values) {
  attention::Inputs in;
  for (attention::Tensor* t : {&in.q, &in.k, &in.v}) {
    *t = attention::Tensor(1, 1, static_cast<int>(values.size()), 1);  // (B, H, N, d)
    t->data = values;
  }
  return in;
}

}  // namespace

TEST_CASE("measure: inputs round once, fp8 saturating and the others overflowing to inf",
          "[measure]") {
  const attention::Inputs raw = small_inputs({1e6, -1e6, 0.1, 43.75});
  const attention::Inputs e4m3 = measure::round_inputs(raw, Format::fp8_e4m3);
  CHECK(e4m3.q.data[0] == 448.0);  // e4m3's largest finite value, not NaN
  CHECK(e4m3.q.data[1] == -448.0);
  CHECK(e4m3.v.data[3] == 44.0);  // 1.0101111b x 2^5 to 3 fraction bits
  const attention::Inputs e5m2 = measure::round_inputs(raw, Format::fp8_e5m2);
  CHECK(e5m2.k.data[0] == 57344.0);  // saturates although e5m2 has an inf
  const attention::Inputs f16 = measure::round_inputs(raw, Format::fp16);
  CHECK(std::isinf(f16.q.data[0]));
  CHECK(f16.q.data[0] > 0);
  CHECK(f16.q.data[2] == numerics::round_to(Format::fp16, 0.1));
  // Representable values stay: a variant's own input stage is the identity afterwards.
  const attention::Inputs again = measure::round_inputs(e4m3, Format::fp8_e4m3);
  CHECK(again.q.data == e4m3.q.data);
}

TEST_CASE("measure: the scale of a tensor leaves non-finite elements out", "[measure]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(measure::max_abs_finite(std::vector<double>{1.0, -3.0, inf, nan, 2.0}) == 3.0);
  CHECK(measure::max_abs_finite(std::vector<double>{inf, nan}) == 0.0);
  CHECK(measure::max_abs_finite(std::vector<double>{}) == 0.0);
}

TEST_CASE("measure: the max_rel floor is one unit roundoff of the output format at the scale",
          "[measure]") {
  CHECK(measure::max_rel_floor(Format::bf16, 4.0) == 4.0 * std::ldexp(1.0, -8));
  CHECK(measure::max_rel_floor(Format::fp16, 2.0) == 2.0 * std::ldexp(1.0, -11));
  CHECK(measure::max_rel_floor(Format::fp32, 0.0) == 0.0);
  CHECK(measure::max_rel_floor(Format::bf16, std::numeric_limits<double>::infinity()) == 0.0);
  // The floor is what max_rel divides by for elements below it: |0.5 - 0| / floor, not / 0.
  const std::vector<double> ref = {4.0, 0.0}, x = {4.0, 0.5};
  const metrics::Deviation d = measure::deviation(x, ref, 4.0, Format::bf16);
  CHECK(d.max_rel_floor == 4.0 * std::ldexp(1.0, -8));
  CHECK(d.max_rel == 0.5 / d.max_rel_floor);
}

TEST_CASE("measure: references compute the raw inputs once and one golden per input format",
          "[measure]") {
  const attention::Shape shape{1, 2, 9, 9, 8};  // B, H, N_q, N_kv, d
  const inputs::Distribution dist = inputs::Distribution::normal(0, 1);
  int raw_reads = 0;
  attention::Options options;
  options.causal = true;
  measure::References refs(measure::rounded_from([&] {
                             ++raw_reads;
                             return inputs::make_inputs(shape, dist, 7, Format::fp64);
                           }),
                           options);
  const auto& bf16 = refs.for_format(Format::bf16);
  const auto& fp16 = refs.for_format(Format::fp16);
  CHECK(&refs.for_format(Format::bf16) == &bf16);
  CHECK(raw_reads == 1);
  CHECK(refs.computed().size() == 2);
  // Rounding drawn fp64 values equals drawing at the format: one rule for files and draws.
  CHECK(bf16.inputs.q.data == inputs::make_inputs(shape, dist, 7, Format::bf16).q.data);
  CHECK(fp16.inputs.v.data == measure::drawn(shape, dist, 7)(Format::fp16).v.data);
  // The golden is attention::golden on exactly those inputs, with the options given.
  const attention::Output expected = attention::golden(bf16.inputs, options);
  CHECK(bf16.golden.output.o.data == expected.o.data);
  CHECK(bf16.golden.max_abs == measure::max_abs_finite(expected.o.data));
  CHECK(bf16.golden.output.o.data != fp16.golden.output.o.data);
}

TEST_CASE("measure: two outputs compared without a floor, in ulps of the output format",
          "[measure]") {
  const double one_ulp = std::ldexp(1.0, -7);  // bf16 at [1, 2)
  const std::vector<double> ref = {1.0, 1.5, 0.0}, x = {1.0, 1.5 + one_ulp, 0.0};
  const measure::OutputComparison c = measure::compare_outputs(x, ref, Format::bf16);
  CHECK(c.difference.max_abs == one_ulp);
  CHECK(c.difference.max_rel_floor == 0.0);
  CHECK(c.ulps.identical == 2);
  CHECK(c.ulps.max_ulp == 1);
}

TEST_CASE("measure: the guard says why inputs or a golden cannot be measured", "[measure]") {
  attention::Options options;
  // fp16 cannot hold 1e6: Q, K and V round to inf, and References says so once per format.
  measure::References refs(measure::rounded_from([] {
                             return small_inputs({1e6, 0.5, -0.25});
                           }),
                           options);
  const auto& fp16 = refs.for_format(Format::fp16);
  REQUIRE(fp16.unmeasurable);
  CHECK_THAT(*fp16.unmeasurable, Catch::Contains("inputs overflow fp16: Q holds 1 value(s)"));
  CHECK_THAT(*fp16.unmeasurable, Catch::Contains("first at flat index 0"));
  CHECK_FALSE(refs.for_format(Format::fp32).unmeasurable);
  // Finite fp64 inputs whose scores overflow: the golden is not finite.
  const attention::Inputs huge = small_inputs({1e200, -1e200, 3e200});
  const measure::Golden g = measure::golden_of(huge, options);
  const auto why = measure::unmeasurable(huge, g, Format::fp64);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("the FP64 golden is not finite"));
  const measure::NonFinite n =
      measure::count_non_finite(std::vector<double>{1, NAN, INFINITY, -INFINITY});
  CHECK(n.nan == 1);
  CHECK(n.inf == 2);
  CHECK(n.first == 1);
  CHECK(n.text() == "1 NaN and 2 infinite value(s) (first at flat index 1)");
}
