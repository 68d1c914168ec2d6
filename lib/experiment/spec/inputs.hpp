// The config-facing side of the input generator: a distribution parsed from config or
// command-line text. The generator and its Distribution live in lib/inputs (random_inputs.hpp),
// below this library, so that the CUDA checks, the tests and `attndev bench` draw the same
// values; they are re-exported here for the experiment code that names them.
#pragma once

#include <string>
#include <string_view>

#include "inputs/random_inputs.hpp"

namespace attndev::experiment {

using inputs::Distribution;
using inputs::make_inputs;
using inputs::sample;
using inputs::TensorId;

// Parses "normal", "normal(0,1)", "uniform(-1,1)", "outlier", "outlier(10,0.001)". Returns false
// with `error` saying what is wrong (and leaves `out` untouched) for anything else.
bool parse_distribution(std::string_view text, Distribution& out, std::string& error);

}  // namespace attndev::experiment
