// The common tensor type of the checkpoint readers and writers (safetensors.hpp, npy.hpp), its
// element codecs, errors and whole-file I/O. The format-specific readers build on this file;
// tensor_file.hpp, which chooses between them by extension or magic bytes, builds on both.
//
// Every reader decodes the stored numbers exactly into double (F16/BF16/F32 -> double is exact),
// so a distance computed between two checkpoints never includes a conversion error of ours.
// Readers never trust the file: every length and offset is checked against the bytes actually
// present before it is used, and every failure is a TensorFileError whose message names the file,
// the tensor and what to do about it.
//
// Writers (write_safetensors in safetensors.hpp, write_npy in npy.hpp) round each value once to
// the tensor's dtype (round-to-nearest-even, lib/numerics) and write atomically (temporary file in
// the same folder + rename), so a killed process never leaves a half-written snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attndev::io {

// Storage types the readers accept; names as safetensors spells them ("F64", "F32", "F16",
// "BF16"). .npy has no bf16.
enum class DType : std::uint8_t { f64, f32, f16, bf16 };

const char* dtype_name(DType d);  // "F64", "F32", "F16", "BF16"
std::size_t dtype_size(DType d);  // bytes per element
// Accepts the safetensors spellings; false for anything else (I32, U8, F8_E4M3, ...).
bool parse_dtype(std::string_view text, DType& out);

struct NamedTensor {
  std::string name;                 // safetensors key; for .npy the file name without ".npy"
  DType dtype = DType::f32;         // how it is (or will be) stored
  std::vector<std::int64_t> shape;  // row-major (C order); {} is a scalar (1 element)
  std::vector<double> values;       // numel() values, C order, decoded exactly

  std::int64_t numel() const;  // product of shape (1 for a scalar; saturates, never wraps)
};

// Little-endian element codecs shared by the readers and writers. decode_le is exact;
// encode_le rounds each value once to the dtype (RNE; F16 overflows to inf, NaN stays NaN).
void decode_le(DType d, const unsigned char* src, std::size_t count, double* dst);
void encode_le(DType d, std::span<const double> values, std::vector<unsigned char>& out);

// Convenience for writers holding float data (e.g. lib/train weights): copies into doubles.
NamedTensor make_tensor(std::string name, DType dtype, std::vector<std::int64_t> shape,
                        std::span<const float> values);

// Any problem with a tensor file: unreadable, truncated, corrupt, unsupported dtype, too large.
struct TensorFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws TensorFileError("SOURCE: WHAT"): every reader's message starts with what it was reading.
[[noreturn]] inline void fail_tensor_file(const std::string& source, const std::string& what) {
  throw TensorFileError(source + ": " + what);
}

// Largest file the readers load (the whole file is read into memory, then decoded to double).
inline constexpr std::uintmax_t kMaxTensorFileBytes = std::uintmax_t{8} << 30;  // 8 GiB

// Reads a whole file into memory with a size limit (TensorFileError on failure). Exposed for the
// readers and the fuzz target.
std::vector<unsigned char> read_file_bytes(const std::filesystem::path& path,
                                           std::uintmax_t max_bytes = kMaxTensorFileBytes);

// Writes bytes to `path` through a temporary file in the same folder and a rename, so readers see
// the old file or the complete new one, never a prefix. Throws TensorFileError.
void write_file_atomically(const std::filesystem::path& path, std::span<const unsigned char> bytes);

}  // namespace attndev::io
