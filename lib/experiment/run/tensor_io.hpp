// Attention tensors as files: the inputs and outputs an external implementation exchanges with
// attndev, what `--dump` writes and `--inputs` / `attndev match` read back.
//
//   inputs:  one .safetensors file, tensors "q", "k", "v", shape (B, H, N, d), stored in the
//            dtype of the working format (BF16, F16, F32, F64; tf32 and fp8 values in F32,
//            exactly), with string metadata (the point's axes, the policy, provenance)
//   output:  "o" (B, H, N_q, d) the same way; read back from .safetensors (a tensor named o, O,
//            out or output, or the only tensor) or .npy, in any float dtype, (B, H, N, d),
//            (H, N, d) or (N, d)
#pragma once

#include <filesystem>

#include "attention/attention.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_file.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

// The file dtype that holds every value of `format` exactly.
io::DType storage_dtype(numerics::Format format);

// Writes atomically; the values must already be representable in `format` (they are rounded
// once more to the dtype, which is then exact). Throws io::TensorFileError.
void write_inputs_file(const std::filesystem::path& path, const attention::Inputs& inputs,
                       numerics::Format format, const io::TensorMetadata& metadata);
void write_output_file(const std::filesystem::path& path, const attention::Tensor& o,
                       numerics::Format format, const io::TensorMetadata& metadata);

// Reads an output tensor and checks it against `expected` (B, H, N_q, d). Throws
// std::runtime_error naming the file and what is wrong (no such file, no tensor o, wrong shape).
// Non-finite values are kept: they are a finding, counted by the metrics.
attention::Tensor read_output_file(const std::filesystem::path& path,
                                   const attention::Shape& expected);

// "(2, 4, 1024, 64)".
std::string shape_text(const attention::Tensor& t);

}  // namespace attndev::experiment
