// One result row (point x variant), the unit of results.jsonl, results.csv and results.json.
//
// Column order is fixed here and only here: identity, axes, variant, status, deviation metrics,
// ratios to the ratio reference, comparison with the reference variant, timing. Rows are JSON
// objects so that report/merge/compare can rebuild every table from the JSONL alone.
#pragma once

#include <string>
#include <vector>

#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"
#include "experiment/run/device_backend.hpp"
#include "experiment/run/variant_runner.hpp"
#include "io/json_values.hpp"
#include "measure/measure.hpp"
#include "metrics/deviation.hpp"

namespace attndev::experiment {

// Every column of results.csv, in order.
const std::vector<std::string>& result_columns();

// A variant's output against its reference variant's output (Config::output_reference).
struct ReferenceComparison {
  std::string reference;               // the reference variant's name
  measure::OutputComparison measured;  // |O - O_ref| and ulps in the variant's output format
};

// `deviation` (vs the golden) is null when the variant produced no output; `reference` is null
// when the variant has no reference variant or one of the two has no output; `ran_on` (where
// the inputs, golden, variant and metrics were computed) is left out when null.
io::Json make_row(const Point& point, const Variant& variant, const VariantOutcome& outcome,
                  const metrics::Deviation* deviation,
                  const ReferenceComparison* reference = nullptr, const RanOn* ran_on = nullptr);

// Fills ratio_to and ratio_<metric> of each row of one point from its reference variant's row
// (Config::ratio_reference). rows[v] belongs to config.variants[v].
void fill_ratios(std::vector<io::Json>& rows, const Config& config);

// The row's status, parsed back once into the type the runner wrote. A status this version did
// not write (a hand-edited or foreign row) reads as failed, naming what it found.
Status row_status(const io::Json& row);

}  // namespace attndev::experiment
