// Launchers of the faithful kernels (faithful_flash.cuh), the emulated twins: one thread per
// (batch, head, query row), any policy, any Br/Bc; flash1, flash2 and the streamed baseline
// (which under the fp64 policy is the golden).
#include <algorithm>
#include <cstddef>
#include <memory>

#include "cuda/cuda_check.cuh"
#include "cuda/faithful_flash.cuh"
#include "cuda/launch.cuh"

namespace attndev::cuda {

template <attention::Algorithm A>
Prepared prepare_faithful(const DeviceProblem& problem) {
  const attention::Shape& s = problem.shape;
  const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * s.seq_q;
  // Each row's block of scores (and flash1's block P V): rows * (Bc [+ d]) doubles.
  // At least one element each: a buffer is never empty, so its pointer is never null.
  auto scratch = std::make_shared<DeviceBuffer<double>>(
      std::max<std::size_t>(1, rows * static_cast<std::size_t>(
                                          faithful::scratch_per_row(A, problem.rows))));
  // flash2's vector form: one count per row (Flash2Work::chunk_count).
  auto counts = std::make_shared<DeviceBuffer<int>>(A == attention::Algorithm::flash2 ? rows : 1);

  faithful::Params p{};
  p.q = problem.q;
  p.k = problem.k;
  p.v = problem.v;
  p.o = problem.o;
  p.lse = problem.lse;
  p.scratch = scratch->get();
  p.counts = counts->get();
  p.batch = s.batch;
  p.heads = s.heads;
  p.rows = problem.rows;

  constexpr unsigned kThreads = faithful::kThreadsPerBlock;
  Prepared out;
  out.launch = [p, scratch, counts, rows] {
    faithful::faithful_kernel<A><<<grid_for(rows, kThreads), kThreads>>>(p);
    ATTNDEV_CUDA_CHECK_LAUNCH();
  };
  out.finish = [] {};
  return out;
}

template Prepared prepare_faithful<attention::Algorithm::flash1>(const DeviceProblem&);
template Prepared prepare_faithful<attention::Algorithm::flash2>(const DeviceProblem&);
template Prepared prepare_faithful<attention::Algorithm::baseline>(const DeviceProblem&);

}  // namespace attndev::cuda
