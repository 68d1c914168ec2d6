// The one visibility rule of every attention algorithm and backend: which keys a query row sees.
//
// Causal masking aligns the bottom-right corners (FlashAttention >= 2.1): query row i sees key j
// iff j <= i + (N_kv - N_q). The keys a row sees are therefore always a prefix [0, n) of the
// key sequence, so every loop here and in the kernels runs j over [0, visible_count(i)) and
// never visits a masked key: masked keys contribute nothing to any max, sum or product (a kernel
// that runs them as -inf scores adds exact zeros instead, which changes no value).
//
// With N_q > N_kv the first N_q - N_kv rows see no key at all (visible_count == 0).
//
// Header-only and ATTNDEV_HD: the CPU emulator, the faithful CUDA kernels and the cuBLAS
// baseline's softmax kernel all call these functions.
#pragma once

#include "numerics/host_device.hpp"

namespace attndev::attention::rows {

ATTNDEV_HD constexpr bool causal_visible(int i, int j, int seq_q, int seq_kv) {
  return static_cast<long>(j) <= static_cast<long>(i) + (seq_kv - seq_q);
}

// Keys visible to query row i: j in [0, visible_count).
ATTNDEV_HD constexpr int visible_count(int i, int seq_q, int seq_kv, bool causal) {
  if (!causal) return seq_kv;
  const long n = static_cast<long>(i) + (seq_kv - seq_q) + 1;
  return static_cast<int>(n < 0 ? 0 : (n > seq_kv ? seq_kv : n));
}

// Keys of the block [j0, j0 + block) that row i sees: 0 when it sees none of them.
ATTNDEV_HD constexpr int visible_in_block(int i, int j0, int block, int seq_q, int seq_kv,
                                          bool causal) {
  const int end = visible_count(i, seq_q, seq_kv, causal);
  const int block_end = j0 + block < end ? j0 + block : end;
  return block_end > j0 ? block_end - j0 : 0;
}

}  // namespace attndev::attention::rows
