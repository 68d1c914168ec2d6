// Dense arithmetic of the small transformer under a training precision.
//
// Training precision is about the dense parts (linear layers, their gradients); attention has its
// own PrecisionPolicy inside lib/attention. The modes mirror mixed-precision training:
//   fp64  everything in double: the gradient checks run here.
//   fp32  matmuls in float (Eigen's float GEMM), activations and master weights fp32.
//   bf16  / fp16  autocast-style: matmul operands rounded to bf16/fp16, products accumulated in
//         float (tensor-core behaviour), the matmul output rounded to bf16/fp16; master weights,
//         optimizer state, element-wise ops and the residual stream stay fp32. fp16 runs use loss
//         scaling (trainer.hpp) since fp16 gradients underflow below 6e-8.
// Element-wise ops and reductions (layer norm, GELU, softmax-cross-entropy, residual adds) are
// computed in double and rounded once to the activation format (fp32 unless fp64): a correctly
// rounded fp32 op. The deviations the study is about come from the matmuls and attention.
#pragma once

#include <Eigen/Core>
#include <string>
#include <string_view>

#include "numerics/format.hpp"
#include "train/config_types.hpp"

namespace attndev::train {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Format of matmul operands and outputs.
numerics::Format matmul_format(Precision p);
// Format of activations, gradients outside matmuls and master weights.
numerics::Format activation_format(Precision p);

// Rounds every element to the format (no-op for fp64).
void round_all(numerics::Format f, Mat& m);

// a (M, K) times b (K, N), each operand optionally transposed, under the precision (see top).
// Deterministic: Eigen is single-threaded here and its GEMM order depends on sizes only.
Mat matmul(Precision p, const Mat& a, bool transpose_a, const Mat& b, bool transpose_b);

}  // namespace attndev::train
