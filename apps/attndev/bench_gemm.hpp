// The yardstick of `attndev bench`: Eigen's GEMM on the two products of attention.
//
// In its own translation unit: Eigen's GEMM kernels (one per scalar type, unrolled for the host's
// vector width by -march=native) are most of what cmd_bench.cpp cost to compile (about 20 s); here
// they compile once, beside the other units, and an edit of the command no longer recompiles them.
#pragma once

#include "attention/attention.hpp"

namespace attndev::app {

// Seconds for the two GEMMs of attention (S = Q K^T, then O = S V) over every (batch, head), in
// float (`single`) or double, with the query rows split into `threads` slices run on the thread
// pool (Eigen parallelizes only through OpenMP, which this build does not use; splitting rows keeps
// each GEMM a large Eigen product). The FLOP count is 4 * B * H * N_q * N_kv * d, the non-causal
// count.
double eigen_gemm_seconds(bool single, const attention::Shape& shape, int threads);

}  // namespace attndev::app
