// attndev._core's tools around the emulator, each a call into the library the CLI uses:
//   round             -> numerics::round_to (every format `attndev list formats` names)
//   inputs            -> measure::drawn: the counter-based generator, as `attndev point` draws
//   read_safetensors  -> io::read_safetensors, write_safetensors -> io::write_safetensors
//   did_you_mean      -> config::did_you_mean, so that the package's own key checks suggest as
//                        the CLI does
// Included by module.cpp; register_tools adds them to the module.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common.hpp"
#include "config/suggest.hpp"
#include "experiment/spec/inputs.hpp"
#include "io/safetensors.hpp"
#include "measure/measure.hpp"
#include "numerics/round.hpp"

namespace attndev::python {

namespace tools {

// Each value rounded once, round-to-nearest-even from double straight to the format, overflowing
// as the format does by default (numerics::default_overflow).
inline FlatOut round_call(const Flat& x, const std::string& format) {
  const numerics::Format f = parse_format(format, "format");
  std::vector<double> out(x.data(), x.data() + x.size());
  {
    nb::gil_scoped_release release;
    for (double& e : out) e = numerics::round_to(f, e);
  }
  const std::size_t shape[1] = {out.size()};
  return owned_array(std::move(out), shape);
}

// Q, K, V of `attndev point --n N --n-kv N_KV --d D --batch B --heads H --dist DIST --seed SEED`,
// drawn and rounded to `format` as the CLI draws them (fp64: the raw samples).
inline std::tuple<OutArray, OutArray, OutArray> inputs_call(int batch, int heads, int seq_q,
                                                            int seq_kv, int head_dim,
                                                            const std::string& distribution,
                                                            std::uint64_t seed,
                                                            const std::string& format) {
  experiment::Distribution dist;
  std::string error;
  if (!experiment::parse_distribution(distribution, dist, error))
    throw ArgumentError("distribution: " + error);
  const numerics::Format f = parse_format(format, "format");
  const attention::Shape shape{batch, heads, seq_q, seq_kv, head_dim};
  attention::Inputs in;
  try {
    in = interruptible([&] { return measure::drawn(shape, dist, seed)(f); });
  } catch (const std::invalid_argument& e) {
    throw ArgumentError(std::string("inputs: ") + e.what());
  } catch (const std::length_error& e) {
    throw ArgumentError(std::string("inputs: ") + e.what());
  }
  return {to_array(std::move(in.q)), to_array(std::move(in.k)), to_array(std::move(in.v))};
}

using TensorEntry = std::tuple<std::string, std::string, std::vector<std::int64_t>, FlatOut>;

// (name, dtype, shape, values) per tensor in file order, and __metadata__.
inline std::tuple<std::vector<TensorEntry>, std::map<std::string, std::string>> read_safetensors(
    const std::string& path) {
  io::SafetensorsContents contents;
  try {
    nb::gil_scoped_release release;
    contents = io::read_safetensors(path);
  } catch (const io::TensorFileError& e) {
    throw ArgumentError(e.what());
  }
  std::vector<TensorEntry> out;
  for (io::NamedTensor& t : contents.tensors) {
    const std::size_t shape[1] = {t.values.size()};
    out.emplace_back(t.name, io::dtype_name(t.dtype), t.shape,
                     owned_array(std::move(t.values), shape));
  }
  return {std::move(out), contents.metadata};
}

inline void write_safetensors(const std::string& path, const std::vector<std::string>& names,
                              const std::vector<std::string>& dtypes,
                              const std::vector<std::vector<std::int64_t>>& shapes,
                              const std::vector<Flat>& values,
                              const std::map<std::string, std::string>& metadata) {
  std::vector<io::NamedTensor> tensors(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    io::NamedTensor& t = tensors[i];
    t.name = names[i];
    if (!io::parse_dtype(dtypes[i], t.dtype))
      throw ArgumentError("dtype of \"" + names[i] + "\": \"" + dtypes[i] +
                          "\" is not one of F64, F32, F16, BF16");
    t.shape = shapes[i];
    t.values.assign(values[i].data(), values[i].data() + values[i].size());
  }
  try {
    nb::gil_scoped_release release;
    io::write_safetensors(path, tensors, metadata);
  } catch (const io::TensorFileError& e) {
    throw ArgumentError(e.what());
  } catch (const std::invalid_argument& e) {
    throw ArgumentError(e.what());
  }
}

inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::vector<std::string_view> views(names.begin(), names.end());
  return config::did_you_mean(word, views);
}

inline nb::list formats() {
  nb::list out;
  for (numerics::Format f : numerics::kEveryFormat) out.append(numerics::format_name(f));
  return out;
}

}  // namespace tools

inline void register_tools(nb::module_& m) {
  m.def("round", &tools::round_call, nb::arg("x"), nb::arg("format"));
  m.def("inputs", &tools::inputs_call, nb::arg("batch"), nb::arg("heads"), nb::arg("seq_q"),
        nb::arg("seq_kv"), nb::arg("head_dim"), nb::arg("distribution"), nb::arg("seed"),
        nb::arg("format"));
  m.def("read_safetensors", &tools::read_safetensors, nb::arg("path"));
  m.def("write_safetensors", &tools::write_safetensors, nb::arg("path"), nb::arg("names"),
        nb::arg("dtypes"), nb::arg("shapes"), nb::arg("values"), nb::arg("metadata"));
  m.def("did_you_mean", &tools::did_you_mean, nb::arg("word"), nb::arg("names"));
  m.def("formats", &tools::formats);
}

}  // namespace attndev::python
