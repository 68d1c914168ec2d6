// Axis values, typed once: the config parses each value into an AxisValue, the plan combines them
// into PointAxes, and the result row is written from PointAxes. Nothing is printed and parsed
// back on the way (docs/configs.md lists the axes).
//
// A point's canonical JSON (PointAxes::to_json) is what its id hashes, so it must not change for
// an existing config: every key and every spelling here is part of the results format.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "attention/attention.hpp"
#include "experiment/spec/inputs.hpp"

namespace attndev::experiment {

// seq_len_kv: "seq_len" (equal to the point's seq_len).
struct SameAsSeqLen {
  friend bool operator==(SameAsSeqLen, SameAsSeqLen) { return true; }
};

// inputs: Q, K, V from a tensor file (experiment/spec/inputs_file.hpp); an empty path means the
// inputs are drawn from the `distribution` axis.
struct InputsFile {
  std::string path;
  friend bool operator==(const InputsFile&, const InputsFile&) = default;
};

// Integers (batch, heads, seq_len, seq_len_kv, head_dim, block_r, block_c), causal, the
// distribution, the scale placement, seq_len_kv's "seq_len", an inputs file.
using AxisValue = std::variant<long long, bool, Distribution, attention::ScalePlacement,
                               SameAsSeqLen, InputsFile>;

// The canonical JSON of one value: 512, true, "normal(0,1)", "scores", "seq_len", "path".
nlohmann::json axis_value_json(const AxisValue& value);
// The same as text for tables: 512, true, normal(0,1), scores, seq_len, path.
std::string axis_value_text(const AxisValue& value);

const char* scale_placement_name(attention::ScalePlacement placement);

// One value of every axis, seq_len_kv resolved.
struct PointAxes {
  InputsFile inputs;  // empty: drawn from `distribution`; else shapes below come from the file
  int batch = 1;
  int heads = 1;
  int seq_len = 0;
  int seq_len_kv = 0;
  int head_dim = 64;
  Distribution distribution;
  bool causal = false;
  attention::ScalePlacement scale_placement = attention::ScalePlacement::scores;
  int block_r = 64;
  int block_c = 64;

  // The integer axes by name (constraints compare them); throws std::logic_error for others.
  long long integer(std::string_view axis) const;
  // Canonical JSON, keys sorted: every axis of kAxisNames, except `inputs` when the inputs are
  // drawn (so ids of configs without files never change) and `distribution` when they are read
  // from a file (no distribution was drawn).
  nlohmann::json to_json() const;
  // to_json().dump(), written directly (a plan of 10^6 points builds no JSON object): the text
  // point ids hash. Without block_r and block_c when `tiles` is false (the input set's text).
  std::string canonical_text(bool tiles = true) const;
  // One axis as table text ("" for an axis to_json leaves out).
  std::string text(std::string_view axis) const;

  attention::Shape shape() const { return {batch, heads, seq_len, seq_len_kv, head_dim}; }
  bool from_file() const { return !inputs.path.empty(); }

  friend bool operator==(const PointAxes&, const PointAxes&) = default;
};

// Sets one axis of `axes` from a value of that axis (the config checked the pairing).
// seq_len_kv's SameAsSeqLen leaves seq_len_kv 0 until resolve_axes() copies seq_len there (seq_len
// may be set after it); resolve_axes() runs after the last set_axis of a point.
void set_axis(PointAxes& axes, std::string_view axis, const AxisValue& value);
void resolve_axes(PointAxes& axes);

}  // namespace attndev::experiment
