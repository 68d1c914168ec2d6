// NumPy .npy files: "\x93NUMPY", major/minor version, header length (2 bytes in v1.0, 4 bytes in
// v2.0 and v3.0, little-endian), an ASCII (v3: UTF-8) Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and '\n', then the data.
//
// Accepted: little-endian floats '<f8', '<f4', '<f2' ('=' native is not accepted: its meaning
// depends on the writer's machine). Big-endian ('>f4'), integer, complex, object and structured
// dtypes are rejected with a message naming the dtype. fortran_order True is accepted and the
// data reordered to C order, so NamedTensor is always row-major. Trailing bytes after the data
// are an error (a truncated or concatenated file), as is data shorter than the shape needs.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/tensor_codec.hpp"

namespace attndev::io {

// `source` names the bytes in error messages; `name` becomes NamedTensor::name.
NamedTensor parse_npy(std::span<const unsigned char> bytes, const std::string& source,
                      std::string name);
// name = the file name without ".npy".
NamedTensor read_npy(const std::filesystem::path& path);

// Version 1.0 ('<f8'/'<f4'/'<f2', C order); each value rounded once (RNE) to the dtype. BF16
// has no .npy dtype: TensorFileError. values.size() must equal numel().
std::vector<unsigned char> encode_npy(const NamedTensor& tensor);
// encode_npy, written atomically (temporary file + rename).
void write_npy(const std::filesystem::path& path, const NamedTensor& tensor);

}  // namespace attndev::io
