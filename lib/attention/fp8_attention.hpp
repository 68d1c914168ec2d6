// Internals of the fp8 algorithms (flash3-fp8 and its ablations, baseline-fp8): the prepared
// problem (scaled e4m3 Q, K, V) and the per-row-block kernels. Not part of the public API.
#pragma once

#include "attention/detail.hpp"
#include "attention/fp8_quant.hpp"

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
void run_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options, Output& out);

Fp8Problem prepare_fp8(Algorithm algorithm, const Problem& p, const Options::Fp8& options);

void flash3_fp8_rows(const Fp8Problem& f, const RowBlock& rb, Output& out);
void baseline_fp8_rows(const Fp8Problem& f, const RowBlock& rb, Output& out);

}  // namespace attndev::attention::detail
