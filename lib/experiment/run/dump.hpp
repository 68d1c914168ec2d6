// Tensor dumps: every point's rounded Q, K, V, the golden O and each variant's O as safetensors,
// with the point's axes, the policy and the provenance in the metadata, so that any result can be
// re-examined outside attndev (or fed back with --inputs / attndev match).
//
//   <dir>/inputs-<format>.safetensors   q, k, v (B, H, N, d) as the variants of that input format
//                                       saw them
//   <dir>/golden-<format>.safetensors   o: the FP64 golden on those inputs (F64)
//   <dir>/<variant>.safetensors         o: the variant's output, in its output format's dtype; the
//                                       name as dump_file_stem writes it
//
// `attndev run` with "dump": true writes <out>/dump/<point id>/; `attndev point --dump DIR`
// writes DIR/. Metadata (string -> string): point_id, seed, axes (JSON), and for a variant its
// name, algorithm, backend, policy (every stage, JSON) and status; provenance (JSON) everywhere.
#pragma once

#include <filesystem>
#include <string>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/run/status.hpp"
#include "io/safetensors.hpp"

namespace attndev::experiment {

// A variant name as a file name, unique and reversible (io::file_name_encode: "x/y" -> "x%2Fy",
// "x_y" stays; io::file_name_decode gives the name back); a name that would read as an inputs or
// golden file has its first letter encoded.
std::string dump_file_stem(const std::string& variant_name);

struct DumpWriter {
  std::filesystem::path dir;
  io::TensorMetadata base;  // point_id, seed, axes, provenance: on every file
  // When set (an output folder above `dir`), the folders from here down to `dir` are attndev's:
  // made or found as real folders, never a link. Either way a file is written only where no link,
  // FIFO or device stands under its name.
  std::filesystem::path owned_from;

  void inputs(const attention::Inputs& inputs, numerics::Format format) const;
  void golden(const attention::Tensor& o, numerics::Format input_format) const;
  void variant(const Variant& variant, const Status& status, const attention::Tensor& o) const;

 private:
  std::filesystem::path file(const std::string& stem) const;  // <dir>/<stem>.safetensors, checked
};

}  // namespace attndev::experiment
