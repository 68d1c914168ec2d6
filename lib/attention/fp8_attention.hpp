// Internals of the fp8 algorithms (flash3-fp8 and its ablations, baseline-fp8): the prepared
// problem (scaled e4m3 Q, K, V) and the Dequant hook with which flash2's and baseline's row
// functions run on it (fp8_attention.cpp). Not part of the public API.
#pragma once

#include "attention/detail.hpp"
#include "attention/fp8_dequant.hpp"
#include "attention/fp8_quant.hpp"
#include "attention/rows/arith.hpp"

namespace attndev::attention::detail {

// The fp8 view of a Problem: e4m3 values with their scales. q has Br-row blocks (flash3 with
// block quantization) or one scale per tensor; k and v likewise with Bc-row blocks.
struct Fp8Problem {
  const Problem* p = nullptr;  // policy, shape, tiles, scale; its q/k/v are the unquantized ones
  fp8::ScaledTensor q, k, v;
};

// Quantizes (and, for flash3 with incoherent processing, rotates) the problem's Q, K, V and runs
// the algorithm over row blocks on p.threads threads. Throws std::invalid_argument when the
// policy's input stage is itself an fp8 format (the inputs would be pre-rounded without a scale)
// or when incoherent processing meets a head_dim that is not a power of two.
// `kind` (fast_kind()) says whether the row functions run on the SIMD fast path (fast.cpp,
// run_fp8_fast) or the generic one; the preparation is the same either way.
void run_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options, FastKind kind,
             Output& out);

Fp8Problem prepare_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options);

// Throws std::invalid_argument when an fp8 algorithm meets a framework-model policy (FA-3's fp8
// kernel has no framework-tensor counterpart): attention::run and the CUDA twins refuse alike.
void require_fp8_policy(Algorithm algorithm, const numerics::PrecisionPolicy& policy);

// The row functions of a prepared fp8 problem on the fast path (fast.cpp).
void run_fp8_fast(Algorithm algorithm, const Fp8Problem& f, FastKind kind, Output& out);

}  // namespace attndev::attention::detail
