// Launchers of the faithful flash1/flash2 kernels (faithful_flash.cuh): one thread per
// (batch, head, query row), any policy, any Br/Bc.
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
  auto scratch = std::make_shared<DeviceBuffer<double>>(
      rows * static_cast<std::size_t>(faithful::scratch_per_row(A, problem.rows)));

  faithful::Params p{};
  p.q = problem.q;
  p.k = problem.k;
  p.v = problem.v;
  p.o = problem.o;
  p.lse = problem.lse;
  p.scratch = scratch->get();
  p.batch = s.batch;
  p.heads = s.heads;
  p.rows = problem.rows;

  // Deep double-precision call chains: small blocks keep register spills cheap.
  constexpr unsigned kThreads = 64;
  Prepared out;
  out.launch = [p, scratch, rows] {
    faithful::faithful_kernel<A><<<grid_for(rows, kThreads), kThreads>>>(p);
    ATTNDEV_CUDA_CHECK_LAUNCH();
  };
  out.finish = [] {};
  return out;
}

template Prepared prepare_faithful<attention::Algorithm::flash1>(const DeviceProblem&);
template Prepared prepare_faithful<attention::Algorithm::flash2>(const DeviceProblem&);

}  // namespace attndev::cuda
