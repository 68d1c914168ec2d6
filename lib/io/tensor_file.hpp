// Tensors read from checkpoint files (safetensors, .npy), as one common type (tensor_codec.hpp):
// a file read by its extension or magic bytes, a folder of them loaded with keys, and two loaded
// sets matched by key.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "io/tensor_codec.hpp"

namespace attndev::io {

// Reads one file: ".safetensors" or ".npy" by extension; any other extension is recognised by its
// magic bytes (\x93NUMPY), else parsed as safetensors. Throws TensorFileError.
std::vector<NamedTensor> read_tensor_file(const std::filesystem::path& path);

// One tensor of a file or folder, with the key it is matched by.
struct LoadedTensor {
  std::string file;  // path relative to the folder given ("" when a single file was given)
  std::string key;   // "file:tensor" for safetensors in a folder, "file" for .npy in a folder,
                     // the tensor name for a single file
  NamedTensor tensor;
};

// A single file, or every *.safetensors / *.npy file under a folder (recursively, sorted by
// relative path; other files are ignored). Throws TensorFileError (also for a folder holding no
// tensor file, or duplicate keys).
std::vector<LoadedTensor> load_tensors(const std::filesystem::path& path);

struct TensorPairing {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // indices into a and b, sorted by key
  std::vector<std::string> only_a;                         // keys without a partner
  std::vector<std::string> only_b;
};

// Matches by key. When both sides were single files (file == "") holding exactly one tensor
// each, those two are paired whatever their names (two .npy files named differently).
TensorPairing match_tensors(const std::vector<LoadedTensor>& a, const std::vector<LoadedTensor>& b);

}  // namespace attndev::io
