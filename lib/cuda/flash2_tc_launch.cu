// Launcher of flash2-tc (flash2_tc.cuh): operands narrowed to bf16/fp16 once at prepare time,
// one CTA per (Q block, batch x head), dynamic shared memory sized by the tile's Layout.
#include <cmath>
#include <cstddef>
#include <memory>
#include <tuple>

#include "cuda/convert.cuh"
#include "cuda/cuda_check.cuh"
#include "cuda/flash2_tc.cuh"
#include "cuda/launch.cuh"
#include "numerics/math.hpp"

namespace attndev::cuda {

namespace {

template <class Tag>
Prepared prepare_flash2_tc(const DeviceProblem& problem) {
  using T = typename tc::ElementOf<Tag::kElement>::Type;
  const attention::Shape& s = problem.shape;
  const std::size_t heads = static_cast<std::size_t>(s.batch) * s.heads;
  const std::size_t q_count = heads * s.seq_q * s.head_dim;
  const std::size_t kv_count = heads * s.seq_kv * s.head_dim;

  struct State {
    DeviceBuffer<T> q, k, v, o;  // (B, H, N, d)
    DeviceBuffer<float> lse;     // (B, H, N_q)
  };
  auto st = std::make_shared<State>();
  st->q = DeviceBuffer<T>(q_count);
  st->k = DeviceBuffer<T>(kv_count);
  st->v = DeviceBuffer<T>(kv_count);
  st->o = DeviceBuffer<T>(q_count);
  st->lse = DeviceBuffer<float>(heads * s.seq_q);
  narrow(problem.q, st->q.get(), q_count);
  narrow(problem.k, st->k.get(), kv_count);
  narrow(problem.v, st->v.get(), kv_count);

  tc::Params<T> p{};
  p.q = st->q.get();
  p.k = st->k.get();
  p.v = st->v.get();
  p.o = st->o.get();
  p.lse = st->lse.get();
  p.seq_q = s.seq_q;
  p.seq_kv = s.seq_kv;
  // Placement `query` already scaled Q on the host; the kernel then works with scale 1.
  const double scale = problem.scale_scores ? problem.scale : 1.0;
  p.scale = static_cast<float>(scale);
  p.scale_log2 = static_cast<float>(scale * numerics::kLog2e);
  p.causal = problem.options.causal;

  constexpr int kBytes = tc::Layout<Tag>::kBytes;
  ATTNDEV_CUDA_CHECK(cudaFuncSetAttribute(tc::flash2_tc_kernel<Tag>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
  // heads <= kTcMaxBatchHeads: select() (dispatch.hpp) said "supported" only then.
  const dim3 grid((s.seq_q + Tag::kBlockM - 1) / Tag::kBlockM, static_cast<unsigned>(heads));

  Prepared out;
  out.launch = [st, p, grid] {
    tc::flash2_tc_kernel<Tag><<<grid, Tag::kThreads, kBytes>>>(p);
    ATTNDEV_CUDA_CHECK_LAUNCH();
  };
  double* o = problem.o;
  double* lse = problem.lse;
  out.finish = [st, o, lse, q_count] {
    widen(st->o.get(), o, q_count);
    widen(st->lse.get(), lse, st->lse.size());
  };
  return out;
}

}  // namespace

// Every row of TcTable is instantiated here, and only here. The key comes from the tag that
// select() (dispatch.hpp) chose, so this is not a second support decision: a miss is a bug.
Prepared prepare_flash2_tc(const TcKey& key, const DeviceProblem& problem) {
  Prepared out;
  const bool found = detail::for_first_match<TcTable>(
      [&](auto tag) {
        using Tag = decltype(tag);
        if (!(TcKey::of<Tag>() == key)) return false;
        out = prepare_flash2_tc<Tag>(problem);
        return true;
      },
      std::make_index_sequence<std::tuple_size_v<TcTable>>{});
  if (!found) throw std::logic_error("flash2-tc: instantiation missing for a selected tag");
  return out;
}

}  // namespace attndev::cuda
