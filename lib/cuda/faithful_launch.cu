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

namespace {

// The launch of algorithm A over `p` (its operands already set), with the per-row scratch and
// counts allocated here and kept alive by the launch closure, with whatever else it must hold.
template <attention::Algorithm A>
Prepared launch_rows(const DeviceProblem& problem, faithful::Params p,
                     std::shared_ptr<void> keep_alive) {
  const attention::Shape& s = problem.shape;
  const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * s.seq_q;
  // Each row's block of scores (and a block's P V where it is formed apart): rows * (Bc [+ d])
  // doubles; at least one element each, so that a pointer is never null.
  auto scratch = std::make_shared<DeviceBuffer<double>>(std::max<std::size_t>(
      1, rows * static_cast<std::size_t>(faithful::scratch_per_row(A, problem.rows))));
  // flash2's vector form: one count per row (Flash2Work::chunk_count).
  auto counts = std::make_shared<DeviceBuffer<int>>(rows);
  p.o = problem.o;
  p.lse = problem.lse;
  p.scratch = scratch->get();
  p.counts = counts->get();
  p.batch = s.batch;
  p.heads = s.heads;
  p.rows = problem.rows;
  constexpr unsigned kThreads = faithful::kThreadsPerBlock;
  Prepared out;
  out.launch = [p, scratch, counts, keep_alive, rows] {
    faithful::faithful_kernel<A><<<grid_for(rows, kThreads), kThreads>>>(p);
    ATTNDEV_CUDA_CHECK_LAUNCH();
  };
  out.finish = [] {};
  return out;
}

// A scaled tensor's values and scales on the device.
struct DeviceScaled {
  DeviceBuffer<double> values, scales;
  attention::fp8::ScaleView view;
  explicit DeviceScaled(const attention::fp8::ScaledTensor& t)
      : values(std::max<std::size_t>(1, t.values.data.size())),
        scales(std::max<std::size_t>(1, t.scales.size())) {
    values.upload(t.values.data.data(), t.values.data.size());
    scales.upload(t.scales.data(), t.scales.size());
    view = t.view();
    view.scales = scales.get();
  }
};

}  // namespace

template <attention::Algorithm A>
Prepared prepare_faithful(const DeviceProblem& problem) {
  faithful::Params p{};
  p.q = problem.q;
  p.k = problem.k;
  p.v = problem.v;
  return launch_rows<A>(problem, p, nullptr);
}

template <attention::Algorithm A>
Prepared prepare_faithful_fp8(const DeviceProblem& problem, const attention::fp8::ScaledTensor& q,
                              const attention::fp8::ScaledTensor& k,
                              const attention::fp8::ScaledTensor& v) {
  struct Held {
    DeviceScaled q, k, v;
  };
  auto held = std::make_shared<Held>(Held{DeviceScaled(q), DeviceScaled(k), DeviceScaled(v)});
  faithful::Params p{};
  p.q = held->q.values.get();
  p.k = held->k.values.get();
  p.v = held->v.values.get();
  p.q_scale = held->q.view;
  p.k_scale = held->k.view;
  p.v_scale = held->v.view;
  return launch_rows<A>(problem, p, held);
}

template Prepared prepare_faithful<attention::Algorithm::flash1>(const DeviceProblem&);
template Prepared prepare_faithful<attention::Algorithm::flash2>(const DeviceProblem&);
template Prepared prepare_faithful<attention::Algorithm::baseline>(const DeviceProblem&);
#define ATTNDEV_FP8_TWIN(A)                                      \
  template Prepared prepare_faithful_fp8<A>(                     \
      const DeviceProblem&, const attention::fp8::ScaledTensor&, \
      const attention::fp8::ScaledTensor&, const attention::fp8::ScaledTensor&);
ATTNDEV_FP8_TWIN(attention::Algorithm::flash3_fp8)
ATTNDEV_FP8_TWIN(attention::Algorithm::flash3_fp8_per_tensor)
ATTNDEV_FP8_TWIN(attention::Algorithm::flash3_fp8_no_hadamard)
ATTNDEV_FP8_TWIN(attention::Algorithm::baseline_fp8)
#undef ATTNDEV_FP8_TWIN

}  // namespace attndev::cuda
