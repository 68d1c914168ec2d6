// Named quantization schemes: the quantizers of the published rules and of the recipes'
// granularities, by the names attndev.quantize (Python) and docs/python.md use. Each is one
// quantize.hpp Spec, applied to an array read as matrices (..., N, d): `last-axis` schemes group
// along d only (their blocks never cross a row), `token` schemes group rows of each (N, d)
// matrix as the recipes group tokens (SageAttention's blocks, per-thread groups, channels).
#pragma once

#include <span>
#include <string_view>

#include "attention/quantize.hpp"

namespace attndev::attention::quant {

struct NamedScheme {
  std::string_view name;
  Spec spec;
  bool tokens;  // groups rows of each (N, d) matrix (false: along the last axis only)
  std::string_view description;
};

std::span<const NamedScheme> named_schemes();

// The scheme of that name; nullptr for an unknown name.
const NamedScheme* find_scheme(std::string_view name);

}  // namespace attndev::attention::quant
