// flash2-tc: a FlashAttention-2 forward kernel on the tensor cores (mma.sync m16n8k16, bf16/fp16
// operands, fp32 accumulation), written to have the real kernels' numerical structure:
//   * Q, K, V tiles staged in shared memory with cp.async, read into the mma fragment layout with
//     ldmatrix (V transposed by ldmatrix.trans);
//   * S = Q K^T accumulated in fp32 registers by the matrix unit (its internal summation order
//     and width are the hardware's: the one place this kernel's arithmetic is not the emulator's);
//   * online softmax in fp32 registers through the named steps of attention/rows/softmax.hpp
//     (OnlineSoftmax, its -inf guard included): running max, exp2 with log2(e) folded into the
//     scale and the subtraction fused into one FFMA, rescale of l and O by exp2(m_old - m_new);
//   * P cast to bf16/fp16 in registers (round to nearest even) and fed straight back as the A
//     operand of the P V mma; O accumulated in fp32 and rounded once, after the 1/l scaling.
// exp2f here is CUDA's accurate exp2f (no fast-math anywhere), not lib/numerics' exp2: this
// kernel is not claimed bit-identical to anything; its deviation is checked against the golden
// instead (docs/cuda.md).
//
// Work split (FA-2's for d <= 128): one CTA of four warps owns kBlockM query rows of one
// (batch, head); warp w owns kMTiles consecutive m16 slices (rows 16 kMTiles w ...), so each K/V
// fragment read from shared memory feeds kMTiles mma. Each thread holds two rows of every
// fragment (groupID and groupID + 8, the C-fragment layout), so row statistics are reduced across
// the four threads of a quad with two shuffles. Q is re-read from shared memory per k16 step
// instead of living in registers: at d = 128 that keeps the kernel at two CTAs per SM.
//
// K/V pipeline (two stages, K and V in separate cp.async groups, both double-buffered):
//   prologue:        issue {Q, K0}, issue {V0}
//   block nb:  A:    wait for K(nb); barrier; issue K(nb+1) into the other K buffer
//                    S = Q K(nb)^T, mask, online softmax
//              B:    wait for V(nb); barrier; issue V(nb+1) into the other V buffer
//                    O += P V(nb)
// Every step commits a group (empty past the last block), so "wait until one group is in
// flight" is the right wait everywhere. A buffer is refilled only after the barrier that follows
// its last reader: K(nb+1)'s buffer was last read by S(nb-1), before barrier B of block nb-1;
// V(nb+1)'s by PV(nb-1), before barrier A of block nb. test/cuda/test_flash2_tc_sim.cpp runs
// this code on the host with every shared-memory access race-checked.
//
// The store of O: the normalized tile is staged in the Q tile's shared memory (each warp in its
// own rows, which only it has read) and written out as 16-byte vector stores, a full row of
// d elements by consecutive lanes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attention/rows/mask.hpp"
#include "attention/rows/softmax.hpp"
#include "cuda/dispatch.hpp"
#include "numerics/host_device.hpp"
#if defined(ATTNDEV_TC_HOST_SIM)
// The includer has defined the primitives (test/cuda/tc_host_sim.hpp).
#else
#include "cuda/flash2_tc_primitives.cuh"
#endif

// A loop nvcc must unroll (register-resident fragments indexed by its counter); the host
// simulation's compilers unroll as they see fit.
#if defined(__CUDACC__)
#define ATTNDEV_TC_UNROLL _Pragma("unroll")
#else
#define ATTNDEV_TC_UNROLL
#endif

namespace attndev::cuda::tc {

template <MatElement E>
struct ElementOf;
template <>
struct ElementOf<MatElement::bf16> {
  using Type = Bf16Type;
};
template <>
struct ElementOf<MatElement::fp16> {
  using Type = HalfType;
};

// The arithmetic model of the online softmax's named steps (attention/rows/softmax.hpp; the
// interface of rows/arith.hpp): fp32 registers, one IEEE operation each, CUDA's exp2f and
// expf, FFMA where a step is fused. Every stage is fp32 here (the kernel-bf16/fp16 policies'
// stats and accumulators), so the `where` of each operation rounds nothing more.
struct TcArith {
  using Value = float;
  template <class W>
  ATTNDEV_HD float add(W, float x, float y) const {
    return x + y;
  }
  template <class W>
  ATTNDEV_HD float sub(W, float x, float y) const {
    return x - y;
  }
  template <class W>
  ATTNDEV_HD float mul(W, float x, float y) const {
    return x * y;
  }
  template <class W>
  ATTNDEV_HD float div(W, float x, float y) const {
    return x / y;
  }
  ATTNDEV_HD float mac(attention::rows::Stage, float acc, float x, float y) const {
    return fmaf(x, y, acc);
  }
  template <class W>
  ATTNDEV_HD float mul_sub(W, float x, float y, float z) const {
    return fmaf(x, y, -z);
  }
  template <class W>
  ATTNDEV_HD float exp(W, float x) const {  // the tensor form's; never taken here
    return expf(x);
  }
  template <class W>
  ATTNDEV_HD float exp2(W, float x) const {
    return exp2f(x);
  }
};

template <class T>
struct Params {
  const T* q;  // (B, H, N_q, d)
  const T* k;  // (B, H, N_kv, d)
  const T* v;  // (B, H, N_kv, d)
  T* o;        // (B, H, N_q, d)
  float* lse;  // (B, H, N_q)
  int seq_q, seq_kv;
  float scale;       // softmax scale, for the lse
  float scale_log2;  // scale * log2(e)
  bool causal;
};

// Shared-memory rows are padded by 8 elements (16 bytes): consecutive rows then start 4 banks
// apart, so the 8 row addresses of each ldmatrix 8x8 matrix hit distinct banks, and so do the
// O staging stores (row groupID, column pair quad lane: bank 4 groupID + quad lane).
template <class Tag>
struct Layout {
  static constexpr int kStride = Tag::kHeadDim + 8;  // elements per smem row
  static constexpr int kQElems = Tag::kBlockM * kStride;
  static constexpr int kKvElems = Tag::kBlockN * kStride;
  // Q (later the O staging tile), then K[2], then V[2].
  static constexpr int kTotalElems = kQElems + 4 * kKvElems;
  static constexpr int kBytes = kTotalElems * 2;
  static_assert((kStride * 2) % 16 == 0, "cp.async/ldmatrix need 16-byte aligned rows");
};

// Copies `rows` rows of a (N, d) matrix starting at row `row0` into a padded smem tile; rows at
// or past n_rows are zero-filled so the mma reads zeros (and the mask removes them from S).
template <class Tag, class T>
ATTNDEV_TC_FN void load_tile(T* smem, const T* gmem, int row0, int rows, int n_rows) {
  constexpr int kChunksPerRow = Tag::kHeadDim / 8;  // 16-byte chunks of 8 elements
  for (int c = thread_id(); c < rows * kChunksPerRow; c += Tag::kThreads) {
    const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
    const bool inside = row0 + r < n_rows;
    const T* src = inside ? gmem + static_cast<std::size_t>(row0 + r) * Tag::kHeadDim + col : gmem;
    cp_async_16(smem + r * Layout<Tag>::kStride + col, src, inside ? 16 : 0);
  }
}

// One CTA: query rows [m_block * kBlockM, ...) of the (batch x head) `head`.
template <class Tag>
ATTNDEV_TC_FN void flash2_tc_cta(const Params<typename ElementOf<Tag::kElement>::Type>& p,
                                 unsigned char* smem_raw, int m_block, std::size_t head) {
  using T = typename ElementOf<Tag::kElement>::Type;
  using L = Layout<Tag>;
  constexpr int kD = Tag::kHeadDim, kBM = Tag::kBlockM, kBN = Tag::kBlockN;
  constexpr int kMT = Tag::kMTiles;  // m16 slices per warp
  constexpr int kDSteps = kD / 16;   // k16 steps of Q K^T
  constexpr int kNTiles = kBN / 8;   // n8 tiles of S
  constexpr int kDTiles = kD / 8;    // n8 tiles of O
  constexpr float kNegInf = -INFINITY;
  using Softmax = attention::rows::OnlineSoftmax<TcArith>;
  const TcArith arith{};

  T* q_s = reinterpret_cast<T*>(smem_raw);  // (kBM, kStride)
  T* k_s = q_s + L::kQElems;                // (2, kBN, kStride)
  T* v_s = k_s + 2 * L::kKvElems;           // (2, kBN, kStride)

  const int tid = thread_id();
  const int warp = tid / 32, lane = tid % 32;
  const int group = lane / 4, quad_lane = lane % 4;
  const int m0 = m_block * kBM;
  const int warp_row0 = warp * 16 * kMT;      // first row of this warp inside the tile
  const T* q_g = p.q + head * p.seq_q * kD;   // (N_q, d)
  const T* k_g = p.k + head * p.seq_kv * kD;  // (N_kv, d)
  const T* v_g = p.v + head * p.seq_kv * kD;  // (N_kv, d)
  // Which keys a row sees: the emulator's one rule (attention/rows/mask.hpp), so the causal
  // diagonal, N_q != N_kv and rows that see no key agree with every other path by construction.
  auto visible = [&](int row) {
    return attention::rows::visible_count(row, p.seq_q, p.seq_kv, p.causal);
  };

  // K/V blocks this Q block needs: those holding a key its last row sees (the last row sees the
  // most; none when causal leaves the whole Q block without a key).
  const int last_row = (p.seq_q < m0 + kBM ? p.seq_q : m0 + kBM) - 1;
  const int n_blocks = (visible(last_row) + kBN - 1) / kBN;

  load_tile<Tag>(q_s, q_g, m0, kBM, p.seq_q);
  if (n_blocks > 0) load_tile<Tag>(k_s, k_g, 0, kBN, p.seq_kv);
  cp_async_commit();
  if (n_blocks > 0) load_tile<Tag>(v_s, v_g, 0, kBN, p.seq_kv);
  cp_async_commit();

  float acc[kMT][kDTiles][4] = {};  // O, unnormalized, fp32
  // Row statistics (m, and this thread's share of l, quad-reduced at the end) for the two rows
  // of each m16 slice; scalars after unrolling, as FA-2's row_max/row_sum registers.
  Softmax softmax[kMT][2];
  for (int t = 0; t < kMT; ++t) {
    for (int r = 0; r < 2; ++r) softmax[t][r].scale_log2 = p.scale_log2;
  }
  auto row_of = [&](int t, int r) { return m0 + warp_row0 + t * 16 + group + 8 * r; };

  for (int nb = 0; nb < n_blocks; ++nb) {
    const int buf = nb & 1;
    const bool more = nb + 1 < n_blocks;
    const T* kb = k_s + buf * L::kKvElems;  // (kBN, kStride)
    const T* vb = v_s + buf * L::kKvElems;  // (kBN, kStride)

    // A: K(nb) (and, at nb = 0, Q) has landed for every thread.
    cp_async_wait<1>();
    sync_cta();
    if (more) load_tile<Tag>(k_s + (buf ^ 1) * L::kKvElems, k_g, (nb + 1) * kBN, kBN, p.seq_kv);
    cp_async_commit();

    // S = Q K^T for this warp's rows: (16 kMT, kBN) in fp32 fragments. One K fragment (two n8
    // tiles) feeds kMT mma pairs.
    float s[kMT][kNTiles][4] = {};
    for (int kk = 0; kk < kDSteps; ++kk) {
      std::uint32_t a[kMT][4];
      for (int t = 0; t < kMT; ++t)
        ldmatrix_x4(
            a[t], q_s + (warp_row0 + t * 16 + lane % 16) * L::kStride + kk * 16 + (lane / 16) * 8);
      for (int np = 0; np < kNTiles / 2; ++np) {
        const int mat = lane / 8;
        std::uint32_t b[4];
        ldmatrix_x4(
            b, kb + (np * 16 + lane % 8 + (mat / 2) * 8) * L::kStride + kk * 16 + (mat % 2) * 8);
        for (int t = 0; t < kMT; ++t) {
          mma_16816<T>(s[t][2 * np], a[t], b[0], b[1]);
          mma_16816<T>(s[t][2 * np + 1], a[t], b[2], b[3]);
        }
      }
    }

    // Mask the columns a row does not see: past N_kv (tile tail) and, when causal, right of the
    // bottom-right diagonal. Decided per block for the whole CTA, so interior blocks skip the
    // compares: the CTA's first row sees the fewest keys, and when it sees the whole block, every
    // row does.
    const int col_end = (nb + 1) * kBN;  // one past this block's last column
    if (visible(m0) < col_end) {
      const int col0 = nb * kBN + quad_lane * 2;
      for (int t = 0; t < kMT; ++t) {
        for (int r = 0; r < 2; ++r) {
          const int seen = visible(row_of(t, r));  // columns [0, seen) are this row's keys
          for (int nt = 0; nt < kNTiles; ++nt) {
            for (int c = 2 * r; c < 2 * r + 2; ++c) {
              if (col0 + nt * 8 + (c & 1) >= seen) s[t][nt][c] = kNegInf;
            }
          }
        }
      }
    }

    // Online softmax, per row r of each m16 slice t (c = 2r, 2r + 1 in each n-tile), through
    // OnlineSoftmax's named steps with their -inf guard. The block max is reduced with fmaxf
    // (FMNMX) rather than rows::block_max's compare-and-select: both skip a NaN and they differ
    // only in the sign of a zero max, which reaches no output (exp2 of +-0 is 1; +-0 + log l).
    // Unrolled by request: with kMTiles = 2 nvcc's unroller otherwise leaves this nest a loop,
    // and the indexed fragments s, acc and softmax move to local memory (864 B of stack at
    // d = 128, Br = 128).
    ATTNDEV_TC_UNROLL
    for (int t = 0; t < kMT; ++t) {
      ATTNDEV_TC_UNROLL
      for (int r = 0; r < 2; ++r) {
        Softmax& sm = softmax[t][r];
        float mx = kNegInf;
        for (int nt = 0; nt < kNTiles; ++nt)
          mx = fmaxf(mx, fmaxf(s[t][nt][2 * r], s[t][nt][2 * r + 1]));
        mx = fmaxf(mx, shfl_xor(mx, 1));
        mx = fmaxf(mx, shfl_xor(mx, 2));
        // The guard: a row none of whose scores so far is above -inf adds nothing (p = 0 for the
        // P V mma the warp runs anyway); its l, m and O stay 0, -inf and 0.
        const bool adds = sm.rescale_max(arith, mx);
        // The row sum is split over the quad, so this thread sums its p from 0 and merges the
        // sum in one FFMA (merge_block_sum) instead of rescale's l *= alpha and accumulate.
        float sum = 0.f;
        for (int nt = 0; nt < kNTiles; ++nt) {
          for (int c = 2 * r; c < 2 * r + 2; ++c) {
            s[t][nt][c] = adds ? sm.prob_kernel_form(arith, s[t][nt][c]) : 0.f;
            sum = arith.add(attention::rows::Held{attention::rows::Stage::stats}, sum, s[t][nt][c]);
          }
        }
        if (adds) {
          sm.merge_block_sum(arith, sum);
          for (int dt = 0; dt < kDTiles; ++dt) {
            acc[t][dt][2 * r] = sm.rescaled_o(arith, acc[t][dt][2 * r]);
            acc[t][dt][2 * r + 1] = sm.rescaled_o(arith, acc[t][dt][2 * r + 1]);
          }
        }
      }
    }

    // B: V(nb) has landed for every thread; V's other buffer (last read by PV(nb - 1), before
    // barrier A) may be refilled.
    cp_async_wait<1>();
    sync_cta();
    if (more) load_tile<Tag>(v_s + (buf ^ 1) * L::kKvElems, v_g, (nb + 1) * kBN, kBN, p.seq_kv);
    cp_async_commit();

    // O += P V: P leaves the S fragments as bf16/fp16 A fragments (two n8 tiles per k16 step);
    // one V fragment (two n8 tiles of O) feeds kMT mma pairs.
    for (int kk = 0; kk < kNTiles / 2; ++kk) {
      std::uint32_t a[kMT][4];
      for (int t = 0; t < kMT; ++t) {
        a[t][0] = pack2<T>(s[t][2 * kk][0], s[t][2 * kk][1]);
        a[t][1] = pack2<T>(s[t][2 * kk][2], s[t][2 * kk][3]);
        a[t][2] = pack2<T>(s[t][2 * kk + 1][0], s[t][2 * kk + 1][1]);
        a[t][3] = pack2<T>(s[t][2 * kk + 1][2], s[t][2 * kk + 1][3]);
      }
      for (int dp = 0; dp < kDTiles / 2; ++dp) {
        const int mat = lane / 8;
        std::uint32_t b[4];
        ldmatrix_x4_trans(
            b, vb + (kk * 16 + lane % 8 + (mat % 2) * 8) * L::kStride + dp * 16 + (mat / 2) * 8);
        for (int t = 0; t < kMT; ++t) {
          mma_16816<T>(acc[t][2 * dp], a[t], b[0], b[1]);
          mma_16816<T>(acc[t][2 * dp + 1], a[t], b[2], b[3]);
        }
      }
    }
  }
  // Nothing may still be landing in shared memory (with no K/V block at all, Q's copy was never
  // waited for) before this warp's Q rows become its O staging rows.
  cp_async_wait<0>();
  sync_cta();

  // Epilogue: l = quad sum; O = acc * (1/l) rounded once to the output type; a row that never
  // passed the guard (l == 0) is O = 0, lse = -inf (finish leaves inv_l at 0). Stage this warp's
  // rows in its own Q rows.
  T* o_s = q_s;  // (kBM, kStride)
  for (int t = 0; t < kMT; ++t) {
    for (int r = 0; r < 2; ++r) {
      Softmax& sm = softmax[t][r];
      sm.l += shfl_xor(sm.l, 1);
      sm.l += shfl_xor(sm.l, 2);
      float inv_l = 0.f;
      const bool seen = sm.finish(arith, inv_l);
      T* o_row = o_s + (warp_row0 + t * 16 + group + 8 * r) * L::kStride;  // (d)
      for (int dt = 0; dt < kDTiles; ++dt)
        st_shared_u32(o_row + dt * 8 + quad_lane * 2,
                      pack2<T>(acc[t][dt][2 * r] * inv_l, acc[t][dt][2 * r + 1] * inv_l));
      // The lse in fp32 (it is stored as fp32), not OnlineSoftmax::lse's double.
      const int row = row_of(t, r);
      if (quad_lane == 0 && row < p.seq_q)
        st_global_f32(p.lse + head * p.seq_q + row, seen ? sm.m * p.scale + logf(sm.l) : kNegInf);
    }
  }
  sync_warp();
  // The warp's 16 kMT rows, each d elements = kD / 8 chunks of 16 bytes, by consecutive lanes.
  constexpr int kChunksPerRow = kD / 8;
  T* o_g = p.o + head * p.seq_q * kD;  // (N_q, d)
  for (int c = lane; c < 16 * kMT * kChunksPerRow; c += 32) {
    const int r = warp_row0 + c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
    if (m0 + r < p.seq_q)
      copy16_shared_to_global(o_g + static_cast<std::size_t>(m0 + r) * kD + col,
                              o_s + r * L::kStride + col);
  }
}

#if !defined(ATTNDEV_TC_HOST_SIM)
// Two CTAs per SM at d = 128 (Br = 128: 4 warps, 102 KiB of shared memory each) on sm_90 caps
// registers at 255 per thread; grid (Q blocks, batch x head).
template <class Tag>
__global__ void __launch_bounds__(Tag::kThreads, 2)
    flash2_tc_kernel(Params<typename ElementOf<Tag::kElement>::Type> p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  flash2_tc_cta<Tag>(p, smem_raw, static_cast<int>(blockIdx.x), blockIdx.y);
}
#endif

}  // namespace attndev::cuda::tc
