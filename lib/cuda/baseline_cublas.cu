// Launcher of the baseline on the GPU: S = Q K^T (cuBLAS), P = softmax(S) rounded at the
// policy's stages (baseline_softmax.cuh), O = P V (cuBLAS), O rounded to the output format.
//
// Row-major (N, d) matrices are column-major (d, N) to cuBLAS, so S^T = K Q^T is computed as
// gemm(T, N) with m = N_kv and O^T = V^T P^T as gemm(N, N) with m = d; no data is transposed.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <memory>

#include "cuda/baseline_softmax.cuh"
#include "cuda/convert.cuh"
#include "cuda/cuda_check.cuh"
#include "cuda/launch.cuh"

namespace attndev::cuda {
namespace {

template <MatElement E>
struct GemmTypes;
template <>
struct GemmTypes<MatElement::bf16> {
  using Operand = __nv_bfloat16;
  using Acc = float;
  static constexpr cudaDataType_t kOperand = CUDA_R_16BF, kAcc = CUDA_R_32F;
  static constexpr cublasComputeType_t kCompute = CUBLAS_COMPUTE_32F;
};
template <>
struct GemmTypes<MatElement::fp16> {
  using Operand = __half;
  using Acc = float;
  static constexpr cudaDataType_t kOperand = CUDA_R_16F, kAcc = CUDA_R_32F;
  static constexpr cublasComputeType_t kCompute = CUBLAS_COMPUTE_32F;
};
template <>
struct GemmTypes<MatElement::fp32> {
  using Operand = float;
  using Acc = float;
  static constexpr cudaDataType_t kOperand = CUDA_R_32F, kAcc = CUDA_R_32F;
  // PEDANTIC: fp32 all the way; cuBLAS may not switch to TF32 (or any reduced precision)
  // whatever the math mode or NVIDIA_TF32_OVERRIDE says.
  static constexpr cublasComputeType_t kCompute = CUBLAS_COMPUTE_32F_PEDANTIC;
};
template <>
struct GemmTypes<MatElement::tf32> {
  using Operand = float;
  using Acc = float;
  static constexpr cudaDataType_t kOperand = CUDA_R_32F, kAcc = CUDA_R_32F;
  static constexpr cublasComputeType_t kCompute = CUBLAS_COMPUTE_32F_FAST_TF32;
};
template <>
struct GemmTypes<MatElement::fp64> {
  using Operand = double;
  using Acc = double;
  static constexpr cudaDataType_t kOperand = CUDA_R_64F, kAcc = CUDA_R_64F;
  static constexpr cublasComputeType_t kCompute = CUBLAS_COMPUTE_64F;
};

// The S and P work set of one launch: whole heads when at least one fits in the budget (at most
// half the free memory, at most 8 GiB), else a slice of one head's query rows (N = 65536 and
// beyond: one head's S and P alone are tens of GiB). At least one row.
struct Chunking {
  int heads = 1;  // heads per launch
  int rows = 1;   // query rows of each head per launch (N_q when heads are whole)
};
Chunking chunking(std::size_t bytes_per_row, int seq_q, int total_heads) {
  std::size_t free_bytes = 0, total_bytes = 0;
  ATTNDEV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t budget = std::min<std::size_t>(free_bytes / 2, std::size_t{8} << 30);
  const std::size_t fit_rows =
      bytes_per_row == 0 ? static_cast<std::size_t>(seq_q) * total_heads : budget / bytes_per_row;
  if (fit_rows == 0)
    throw std::runtime_error("baseline: one query row's S and P (" + std::to_string(bytes_per_row) +
                             " bytes) do not fit in device memory; use flash kernels");
  Chunking c;
  if (fit_rows >= static_cast<std::size_t>(seq_q)) {
    c.rows = seq_q;
    c.heads = static_cast<int>(
        std::min<std::size_t>(fit_rows / static_cast<std::size_t>(seq_q), total_heads));
  } else {
    c.rows = static_cast<int>(fit_rows);
  }
  return c;
}

}  // namespace

template <MatElement E>
Prepared prepare_baseline(const DeviceProblem& problem) {
  using Types = GemmTypes<E>;
  using Operand = typename Types::Operand;
  using Acc = typename Types::Acc;
  const attention::Shape& s = problem.shape;
  const int heads = s.batch * s.heads;
  const std::size_t q_count = static_cast<std::size_t>(heads) * s.seq_q * s.head_dim;
  const std::size_t kv_count = static_cast<std::size_t>(heads) * s.seq_kv * s.head_dim;

  struct State {
    CublasHandle cublas;
    DeviceBuffer<Operand> q, k, v;  // (B, H, N, d) operands
    DeviceBuffer<Acc> scores;       // (chunk heads, chunk rows, N_kv) raw dot products
    DeviceBuffer<Operand> probs;    // (chunk heads, chunk rows, N_kv) P in the operand type
    DeviceBuffer<Acc> out;          // (B, H, N_q, d) PV accumulators
    Chunking chunk;
  };
  auto st = std::make_shared<State>();
  st->q = DeviceBuffer<Operand>(q_count);
  st->k = DeviceBuffer<Operand>(kv_count);
  st->v = DeviceBuffer<Operand>(kv_count);
  st->out = DeviceBuffer<Acc>(q_count);
  narrow(problem.q, st->q.get(), q_count);
  narrow(problem.k, st->k.get(), kv_count);
  narrow(problem.v, st->v.get(), kv_count);
  st->chunk = chunking(static_cast<std::size_t>(s.seq_kv) * (sizeof(Acc) + sizeof(Operand)),
                       s.seq_q, heads);
  const std::size_t chunk_scores =
      static_cast<std::size_t>(st->chunk.heads) * st->chunk.rows * s.seq_kv;
  st->scores = DeviceBuffer<Acc>(chunk_scores);
  st->probs = DeviceBuffer<Operand>(chunk_scores);
  ATTNDEV_CUBLAS_CHECK(cublasSetMathMode(st->cublas.get(), CUBLAS_DEFAULT_MATH));

  const DeviceProblem pr = problem;
  Prepared out;
  out.launch = [st, pr, heads, q_count] {
    const attention::Shape& sh = pr.shape;
    const Acc one = 1, zero = 0;
    const long long q_stride = static_cast<long long>(sh.seq_q) * sh.head_dim;
    const long long kv_stride = static_cast<long long>(sh.seq_kv) * sh.head_dim;
    for (int h0 = 0; h0 < heads; h0 += st->chunk.heads) {
      const int n = std::min(st->chunk.heads, heads - h0);
      for (int i0 = 0; i0 < sh.seq_q; i0 += st->chunk.rows) {
        const int m = std::min(st->chunk.rows, sh.seq_q - i0);
        const long long s_stride = static_cast<long long>(m) * sh.seq_kv;
        // S^T (N_kv, m) column-major = K (N_kv, d) . Q[i0 : i0 + m]^T (d, m); raw dots, scaled
        // later in double exactly as the emulator scales them.
        ATTNDEV_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            st->cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, sh.seq_kv, m, sh.head_dim, &one,
            st->k.get() + h0 * kv_stride, Types::kOperand, sh.head_dim, kv_stride,
            st->q.get() + h0 * q_stride + static_cast<long long>(i0) * sh.head_dim, Types::kOperand,
            sh.head_dim, q_stride, &zero, st->scores.get(), Types::kAcc, sh.seq_kv, s_stride, n,
            Types::kCompute, CUBLAS_GEMM_DEFAULT));
        const baseline::SoftmaxParams sp{n, h0, m, i0, pr.rows, pr.lse};
        constexpr unsigned kThreads = 128;
        baseline::softmax_rows_kernel<<<grid_for(std::size_t(n) * m, kThreads), kThreads>>>(
            st->scores.get(), st->probs.get(), sp);
        ATTNDEV_CUDA_CHECK_LAUNCH();
        // O[i0 : i0 + m]^T (d, m) column-major = V^T (d, N_kv) . P^T (N_kv, m).
        ATTNDEV_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            st->cublas.get(), CUBLAS_OP_N, CUBLAS_OP_N, sh.head_dim, m, sh.seq_kv, &one,
            st->v.get() + h0 * kv_stride, Types::kOperand, sh.head_dim, kv_stride, st->probs.get(),
            Types::kOperand, sh.seq_kv, s_stride, &zero,
            st->out.get() + h0 * q_stride + static_cast<long long>(i0) * sh.head_dim, Types::kAcc,
            sh.head_dim, q_stride, n, Types::kCompute, CUBLAS_GEMM_DEFAULT));
      }
    }
    constexpr unsigned kThreads = 256;
    baseline::round_output_kernel<<<grid_for(q_count, kThreads), kThreads>>>(st->out.get(), pr.o,
                                                                             q_count, pr.policy);
    ATTNDEV_CUDA_CHECK_LAUNCH();
  };
  out.finish = [] {};
  return out;
}

template Prepared prepare_baseline<MatElement::bf16>(const DeviceProblem&);
template Prepared prepare_baseline<MatElement::fp16>(const DeviceProblem&);
template Prepared prepare_baseline<MatElement::fp32>(const DeviceProblem&);
template Prepared prepare_baseline<MatElement::tf32>(const DeviceProblem&);
template Prepared prepare_baseline<MatElement::fp64>(const DeviceProblem&);

}  // namespace attndev::cuda
