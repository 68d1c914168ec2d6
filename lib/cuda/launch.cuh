// The launcher layer between dispatch (cuda_backend.cpp) and the kernels (*.cuh).
//
// A launcher turns a problem already on the device (Q, K, V as doubles in the input format) into
// a Prepared run: `launch` is the work that gets timed (kernels and GEMMs only, enqueued on the
// default stream), `finish` converts the kernel's own output types into the double (B, H, N_q, d)
// output and the lse, once, after timing. Conversions and allocations happen at prepare time so
// they are never timed.
#pragma once

#include <functional>

#include "attention/attention.hpp"
#include "attention/fp8_quant.hpp"
#include "attention/rows/params.hpp"
#include "cuda/dispatch.hpp"
#include "numerics/policy.hpp"

namespace attndev::cuda {

struct DeviceProblem {
  const double* q;  // (B, H, N_q, d) device, values in the input format
  const double* k;  // (B, H, N_kv, d) device
  const double* v;  // (B, H, N_kv, d) device
  double* o;        // (B, H, N_q, d) device, written by finish (or by launch)
  double* lse;      // (B, H, N_q) device
  attention::Shape shape;
  attention::Options options;
  numerics::PrecisionPolicy policy;
  bool scale_scores;  // false when the scale was folded into Q on the host (placement `query`)
  double scale;       // softmax scale (1/sqrt(d) unless the options say otherwise)
  // The same problem as the emulator's row functions see it (attention::Problem::row_params()):
  // the faithful kernels and the baseline's softmax take their scales and policy from here.
  attention::rows::Params rows;
};

struct Prepared {
  std::function<void()> launch;
  std::function<void()> finish;
};

template <attention::Algorithm A>
Prepared prepare_faithful(const DeviceProblem& problem);

// The fp8 algorithms' twins: the host's prepare_fp8 quantized Q, K, V (and rotated Q, K); their
// values and scales are uploaded here and the rows run with the Fp8Dequant hook.
template <attention::Algorithm A>
Prepared prepare_faithful_fp8(const DeviceProblem& problem, const attention::fp8::ScaledTensor& q,
                              const attention::fp8::ScaledTensor& k,
                              const attention::fp8::ScaledTensor& v);

template <MatElement E>
Prepared prepare_baseline(const DeviceProblem& problem);

// Identifies one TcTable row at run time (the tag select() chose, carried across a TU boundary).
struct TcKey {
  MatElement element;
  int head_dim, block_m, block_n;
  template <class Tag>
  static constexpr TcKey of() {
    return {Tag::kElement, Tag::kHeadDim, Tag::kBlockM, Tag::kBlockN};
  }
  friend constexpr bool operator==(const TcKey&, const TcKey&) = default;
};

Prepared prepare_flash2_tc(const TcKey& key, const DeviceProblem& problem);

}  // namespace attndev::cuda
