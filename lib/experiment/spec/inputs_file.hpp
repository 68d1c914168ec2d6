// Q, K, V read from files, so deviation can be measured on activations captured from a model
// (and on a dump written by `--dump`), not only on draws from a distribution.
//
// Accepted: one .safetensors file holding tensors named q, k, v (also Q/K/V or query/key/value),
// or a folder holding q.npy, k.npy, v.npy (or one such .safetensors). Shapes (B, H, N, d),
// (H, N, d) or (N, d), the same rank for all three: Q (B, H, N_q, d), K and V (B, H, N_kv, d).
// Every value must be finite. The values are kept exactly as stored (F16/BF16/F32/F64 decode
// exactly to double); each variant rounds them to its input format like generated inputs.
#pragma once

#include <filesystem>

#include "attention/attention.hpp"
#include "numerics/format.hpp"

namespace attndev::experiment {

// Throws std::runtime_error naming the file, the tensor and the fix (missing tensor, wrong rank,
// shapes that do not fit together, a non-finite value, an unreadable file).
attention::Inputs read_inputs_file(const std::filesystem::path& path);

// read_inputs_file(path).shape(), with the same checks.
attention::Shape inputs_file_shape(const std::filesystem::path& path);

}  // namespace attndev::experiment
