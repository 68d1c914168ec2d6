// Eigen's GEMM for `attndev bench` (bench_gemm.hpp says why it has its own unit).
#include "bench_gemm.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <vector>

#include "attention/parallel.hpp"

namespace attndev::app {

namespace {

template <class Scalar>
double gemm_seconds(const attention::Shape& s, int threads) {
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Matrix q = Matrix::Random(s.seq_q, s.head_dim);   // (N_q, d)
  const Matrix k = Matrix::Random(s.seq_kv, s.head_dim);  // (N_kv, d)
  const Matrix v = Matrix::Random(s.seq_kv, s.head_dim);  // (N_kv, d)
  const int n_threads = std::max(1, std::min(threads, s.seq_q));
  std::vector<Matrix> scores(static_cast<std::size_t>(n_threads));
  std::vector<Matrix> out(static_cast<std::size_t>(n_threads));
  auto work = [&](int t) {
    const int r0 = static_cast<int>(static_cast<long>(s.seq_q) * t / n_threads);
    const int r1 = static_cast<int>(static_cast<long>(s.seq_q) * (t + 1) / n_threads);
    for (int bh = 0; bh < s.batch * s.heads; ++bh) {
      scores[t].noalias() = q.middleRows(r0, r1 - r0) * k.transpose();  // (rows, N_kv)
      out[t].noalias() = scores[t] * v;                                 // (rows, d)
    }
  };
  const auto start = std::chrono::steady_clock::now();
  attention::parallel_for(static_cast<std::size_t>(n_threads), n_threads, /*schedule_seed=*/0,
                          [&](std::size_t t) { work(static_cast<int>(t)); });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double eigen_gemm_seconds(bool single, const attention::Shape& shape, int threads) {
  return single ? gemm_seconds<float>(shape, threads) : gemm_seconds<double>(shape, threads);
}

}  // namespace attndev::app
