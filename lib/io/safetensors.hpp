// safetensors: an 8-byte little-endian header length N, N bytes of JSON, then the data buffer.
//
//   {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {"k": "v"}}
//
// Offsets are relative to the start of the buffer (byte 8 + N). The reader validates, before
// touching any data: N <= file size - 8 and N <= kMaxSafetensorsHeader; the header is a JSON
// object; every entry has a known dtype, a shape of non-negative integers, offsets with
// begin <= end <= buffer size and end - begin == numel * dtype size; no two tensors overlap and
// together they cover the buffer exactly (the format has no holes or trailing bytes). Integer and
// fp8 dtypes (I32, U8, F8_E4M3, ...) are rejected with the tensor's name.
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "io/tensor_codec.hpp"

namespace attndev::io {

inline constexpr std::uint64_t kMaxSafetensorsHeader =
    100000000;  // 100 MB, as the reference reader

using TensorMetadata = std::map<std::string, std::string>;  // "__metadata__": string -> string

struct SafetensorsContents {
  std::vector<NamedTensor> tensors;  // in order of data offset
  TensorMetadata metadata;
};

// `source` names the bytes in error messages (usually the path). Throws TensorFileError.
SafetensorsContents parse_safetensors(std::span<const unsigned char> bytes,
                                      const std::string& source);
SafetensorsContents read_safetensors(const std::filesystem::path& path);

// Tensors are laid out in the order given; each value is rounded once (RNE) to the tensor's
// dtype. Names must be unique, non-empty and not "__metadata__"; values.size() must equal
// numel(). The header is padded with spaces to a multiple of 8 bytes (aligned data).
std::vector<unsigned char> encode_safetensors(std::span<const NamedTensor> tensors,
                                              const TensorMetadata& metadata = {});
// encode_safetensors, written atomically (temporary file + rename).
void write_safetensors(const std::filesystem::path& path, std::span<const NamedTensor> tensors,
                       const TensorMetadata& metadata = {});

}  // namespace attndev::io
